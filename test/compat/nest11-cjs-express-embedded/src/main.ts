import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';

async function bootstrap(): Promise<void> {
  // 'warn' shows the embedded store's start-up warning that limits are per process.
  const app = await NestFactory.create(AppModule, { logger: ['error', 'warn'] });
  await app.listen(0, '127.0.0.1');
  console.log(`listening on ${await app.getUrl()}`);
}
void bootstrap();
