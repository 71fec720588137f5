import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { serveOpenApi } from './openapi.js';

const app = await NestFactory.create(AppModule);
app.enableShutdownHooks();
serveOpenApi(app);
const port = Number(process.env.PORT ?? 3000);
await app.listen(port);
new Logger('Sample').log(
  `Listening on http://localhost:${port} (sandbox: /sandbox, API docs: /docs)`,
);
