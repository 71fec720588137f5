import { Controller, Get, Query } from '@nestjs/common';
import { RateLimit, SkipRateLimit } from '../lib/index.js';

/** One route per algorithm, plus the multi-policy, cost-weighted and skipped cases. */
@Controller()
export class DemoController {
  @Get()
  index() {
    return {
      routes: [
        '/token-bucket',
        '/leaky-bucket',
        '/fixed-window',
        '/sliding-log',
        '/sliding-counter',
        '/search',
        '/report?pages=3',
        '/health',
        '/sandbox',
      ],
    };
  }

  /** Falls under the module's default policy (100/min per client, shared by such routes). */
  @Get('hello')
  hello() {
    return { hello: 'world' };
  }

  @Get('token-bucket')
  @RateLimit({ algorithm: 'token-bucket', limit: 5, window: '10s', burst: 10 })
  tokenBucket() {
    return { algorithm: 'token-bucket' };
  }

  @Get('leaky-bucket')
  @RateLimit({ algorithm: 'leaky-bucket', limit: 5, window: '5s', burst: 3 })
  leakyBucket() {
    return { algorithm: 'leaky-bucket' };
  }

  @Get('fixed-window')
  @RateLimit({ algorithm: 'fixed-window', limit: 5, window: '10s' })
  fixedWindow() {
    return { algorithm: 'fixed-window' };
  }

  @Get('sliding-log')
  @RateLimit({ algorithm: 'sliding-window-log', limit: 5, window: '10s' })
  slidingLog() {
    return { algorithm: 'sliding-window-log' };
  }

  @Get('sliding-counter')
  @RateLimit({ algorithm: 'sliding-window-counter', limit: 5, window: '10s' })
  slidingCounter() {
    return { algorithm: 'sliding-window-counter' };
  }

  /** Two budgets at once: a request passes only if both admit it, and a denial charges neither. */
  @Get('search')
  @RateLimit(
    { name: 'burst', algorithm: 'token-bucket', limit: 2, window: '1s', burst: 5 },
    { name: 'hourly', algorithm: 'sliding-window-counter', limit: 50, window: '1h' },
  )
  search() {
    return { results: [] };
  }

  /** Each page of the report costs one unit of a 20-unit budget. */
  @Get('report')
  @RateLimit({
    name: 'pages',
    limit: 20,
    window: '1m',
    cost: (context) =>
      Number(context.switchToHttp().getRequest<{ query: { pages?: string } }>().query.pages ?? 1),
  })
  report(@Query('pages') pages = '1') {
    return { pages: Number(pages) };
  }

  @Get('health')
  @SkipRateLimit()
  health() {
    return { status: 'ok' };
  }
}
