import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create(AppModule, { logger: ['error', 'warn', 'log'] });
  await app.listen(0, '127.0.0.1');
  console.log(`listening on ${await app.getUrl()}`);
}
void bootstrap();
