import { Controller, Get } from '@nestjs/common';
import { RateLimit } from '../../lib/index.js';

/**
 * GET /once, route id `OnceController.once`: two fixed windows of a minute, 'wide' (5) and
 * 'once' (1). A client's first request is allowed (4 and 0 left), its second denied by
 * 'once' alone, and charged to neither.
 */
@Controller()
export class OnceController {
  @Get('once')
  @RateLimit(
    { name: 'wide', algorithm: 'fixed-window', limit: 5, window: '1m' },
    { name: 'once', algorithm: 'fixed-window', limit: 1, window: '1m' },
  )
  once() {
    return 'ok';
  }
}
