import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from './app.module.js';

const app = await NestFactory.create<NestFastifyApplication>(AppModule, new FastifyAdapter(), {
  logger: ['error', 'warn'],
});
await app.listen(0, '127.0.0.1');
console.log(`listening on ${await app.getUrl()}`);
