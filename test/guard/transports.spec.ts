import { type ExecutionContext, type HttpException, Injectable } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/internal';
import { Test } from '@nestjs/testing';
import {
  RateLimit,
  RateLimitGuard,
  RateLimitModule,
  type RateLimitModuleOptions,
} from '../../lib/index.js';
import { RecordingLogger } from '../support/test-app.js';

/** A chat-bot framework's update, as its Nest integration would hand it to guards. */
interface BotUpdate {
  from: string;
}

class BotCommands {
  @RateLimit({ algorithm: 'fixed-window', limit: 2, window: '1m' })
  start() {}
}

class BotError extends Error {
  constructor(
    message: string,
    readonly retryAfter: number | undefined,
  ) {
    super(message);
  }
}

/** What an app adds for a transport of its own: its error idiom and where headers go (none). */
@Injectable()
class BotRateLimitGuard extends RateLimitGuard {
  readonly responsesAsked: string[] = [];

  protected override getResponse(context: ExecutionContext): unknown {
    this.responsesAsked.push(context.getType());
    return undefined;
  }

  protected override toTransportError(
    _context: ExecutionContext,
    exception: HttpException & { retryAfter?: number },
  ): Promise<Error> {
    return Promise.resolve(new BotError(`bot: ${exception.message}`, exception.retryAfter));
  }
}

const update = (from: string) => {
  const context = new ExecutionContextHost(
    [{ from } satisfies BotUpdate],
    BotCommands,
    BotCommands.prototype.start,
  );
  context.setType('telegraf');
  return context;
};

/** The subclass as the app provides it, started without an HTTP server. */
async function withBotGuard(
  options: RateLimitModuleOptions,
  body: (guard: BotRateLimitGuard) => Promise<void>,
): Promise<void> {
  const moduleRef = await Test.createTestingModule({
    imports: [RateLimitModule.forRoot({ guard: false, ...options })],
    providers: [BotRateLimitGuard],
  })
    .setLogger(new RecordingLogger())
    .compile();
  await moduleRef.init();
  try {
    await body(moduleRef.get(BotRateLimitGuard));
  } finally {
    await moduleRef.close();
  }
}

describe('a transport added by a guard subclass', () => {
  it('is limited when contextTypes names it, keyed and answered by the app, with no headers', async () => {
    await withBotGuard(
      {
        contextTypes: ['http', 'telegraf'],
        keyBy: (context) => context.getArgByIndex<BotUpdate>(0).from,
        // Frozen: on the wall clock a minute could turn between alice's requests.
        clock: () => 1_700_000_000_000,
      },
      async (guard) => {
        expect(await guard.canActivate(update('alice'))).toBe(true);
        expect(await guard.canActivate(update('alice'))).toBe(true);
        const denied = guard.canActivate(update('alice'));
        await expect(denied).rejects.toBeInstanceOf(BotError);
        await expect(denied).rejects.toMatchObject({
          message: expect.stringMatching(/^bot: Rate limit exceeded \("default"\)/),
          retryAfter: expect.any(Number),
        });
        expect(await guard.canActivate(update('bob'))).toBe(true);
        expect(guard.responsesAsked).toContain('telegraf');
      },
    );
  });

  it('passes unlimited when contextTypes leaves it out', async () => {
    await withBotGuard({ keyBy: () => 'everyone' }, async (guard) => {
      for (let i = 0; i < 3; i++) expect(await guard.canActivate(update('carol'))).toBe(true);
      expect(guard.responsesAsked).toEqual([]);
    });
  });
});
