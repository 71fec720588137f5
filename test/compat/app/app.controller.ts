import { Controller, Get } from '@nestjs/common';
import { RateLimit } from 'nestjs-redis-rate-limiter';

export const LIMIT = 3;

@Controller()
export class AppController {
  @Get('limited')
  @RateLimit({ limit: LIMIT, window: '1m' })
  limited(): string {
    return 'ok';
  }

  @Get('other')
  @RateLimit({ limit: LIMIT, window: '1m' })
  other(): string {
    return 'ok';
  }
}
