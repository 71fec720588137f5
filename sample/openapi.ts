import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';

/**
 * The OpenAPI document at /docs (JSON at /docs-json): with @nestjs/swagger installed, the
 * limiter documents each limited route's 429 (and the 503 of a 'closed' route) itself.
 */
export function serveOpenApi(app: INestApplication): void {
  const config = new DocumentBuilder()
    .setTitle('nestjs-redis-rate-limiter sample')
    .setDescription('One route per algorithm, a multi-policy route, a cost-weighted one.')
    .build();
  SwaggerModule.setup('docs', app, () => SwaggerModule.createDocument(app, config));
}
