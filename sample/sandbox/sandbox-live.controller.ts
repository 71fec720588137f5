import { Controller, Get } from '@nestjs/common';
import { RateLimit, type Algorithm } from '../../lib/index.js';

/** The budget of every live route, keyed by client IP and counted on the wall clock. */
export const LIVE_POLICY = { name: 'live', limit: 5, window: '10s' } as const;

/** What a live route answers once the guard lets a request through. */
export interface LiveReply {
  algorithm: Algorithm;
  servedAt: string;
}

const reply = (algorithm: Algorithm): LiveReply => ({
  algorithm,
  servedAt: new Date().toISOString(),
});

/**
 * Real rate-limited routes, one per algorithm, for the page's live mode: the global guard
 * decides, sets the RateLimit headers, answers 429 or (leaky bucket) waits before the handler.
 */
@Controller('sandbox/live')
export class SandboxLiveController {
  @Get('sliding-window-log')
  @RateLimit({ ...LIVE_POLICY, algorithm: 'sliding-window-log' })
  slidingWindowLog(): LiveReply {
    return reply('sliding-window-log');
  }

  @Get('sliding-window-counter')
  @RateLimit({ ...LIVE_POLICY, algorithm: 'sliding-window-counter' })
  slidingWindowCounter(): LiveReply {
    return reply('sliding-window-counter');
  }

  @Get('token-bucket')
  @RateLimit({ ...LIVE_POLICY, algorithm: 'token-bucket' })
  tokenBucket(): LiveReply {
    return reply('token-bucket');
  }

  @Get('leaky-bucket')
  @RateLimit({ ...LIVE_POLICY, algorithm: 'leaky-bucket' })
  leakyBucket(): LiveReply {
    return reply('leaky-bucket');
  }

  @Get('fixed-window')
  @RateLimit({ ...LIVE_POLICY, algorithm: 'fixed-window' })
  fixedWindow(): LiveReply {
    return reply('fixed-window');
  }
}
