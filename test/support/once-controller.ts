import { Controller, Get } from '@nestjs/common';
import { RateLimit } from '../../lib/index.js';

/**
 * The length of both of /once's windows. On a real clock a test that counts on one window
 * across requests first waits for room in it (`untilWindowHasRoom`).
 */
export const ONCE_WINDOW_MS = 60_000;

/**
 * GET /once, route id `OnceController.once`: two fixed windows of a minute, 'wide' (5) and
 * 'once' (1). A client's first request is allowed (4 and 0 left), its second denied by
 * 'once' alone, and charged to neither.
 */
@Controller()
export class OnceController {
  @Get('once')
  @RateLimit(
    { name: 'wide', algorithm: 'fixed-window', limit: 5, window: ONCE_WINDOW_MS },
    { name: 'once', algorithm: 'fixed-window', limit: 1, window: ONCE_WINDOW_MS },
  )
  once() {
    return 'ok';
  }
}
