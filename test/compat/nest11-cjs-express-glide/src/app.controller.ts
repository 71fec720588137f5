import { Controller, Get } from '@nestjs/common';
import { RateLimit } from 'nestjs-redis-rate-limiter';

@Controller()
export class AppController {
  @Get('limited')
  @RateLimit({ limit: 3, window: '1m' })
  limited(): string {
    return 'ok';
  }
}
