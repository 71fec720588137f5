import { type ExecutionContext, Logger } from '@nestjs/common';
import { DenialResponses } from '../../lib/guard/denial-responses.js';
import {
  RateLimitExceededException,
  RateLimitUnavailableException,
} from '../../lib/rate-limit.exceptions.js';
import type { RateLimitDecision } from '../../lib/interfaces/rate-limit-decision.interface.js';
import type { ResolvedRateLimitOptions } from '../../lib/config/resolved-options.js';
import type { RateLimitDenial } from '../../lib/interfaces/rate-limit-response.interface.js';

const CONTEXT = { getType: () => 'http' } as unknown as ExecutionContext;
const DECISION: RateLimitDecision = { allowed: false, results: [] };
const MESSAGE = 'Too many requests, please retry later.';

/** Responses under the given options, and the warnings they logged. */
function responsesFor(
  options: Partial<Pick<ResolvedRateLimitOptions, 'limitedResponse' | 'unavailableResponse'>>,
) {
  const warnings: string[] = [];
  const logger = new Logger('test');
  logger.warn = (message: unknown) => void warnings.push(String(message));
  return { responses: new DenialResponses(options as ResolvedRateLimitOptions, logger), warnings };
}

const defaultBody = (message: string) => ({
  statusCode: 429,
  error: 'Too Many Requests',
  message,
  retryAfter: 7,
});

describe('DenialResponses: the 429', () => {
  it('is the default one without options, and carries no stack', () => {
    const { responses } = responsesFor({});
    const denial = responses.limited(CONTEXT, DECISION, MESSAGE, 7);
    expect(denial).toBeInstanceOf(RateLimitExceededException);
    expect([denial.getStatus(), denial.message, denial.retryAfter]).toEqual([429, MESSAGE, 7]);
    expect(denial.getResponse()).toEqual(defaultBody(MESSAGE));
    expect(denial.stack).not.toMatch(/\n\s+at /);
  });

  it('takes a limitedResponse string as its message', () => {
    const { responses, warnings } = responsesFor({ limitedResponse: 'Slow down' });
    const denial = responses.limited(CONTEXT, DECISION, MESSAGE, 7);
    expect(denial.message).toBe('Slow down');
    expect(denial.getResponse()).toEqual(defaultBody('Slow down'));
    // A string is not called as a body function.
    expect(warnings).toEqual([]);
  });

  it('takes the body a limitedResponse function makes of the request and the denial', () => {
    const seen: [ExecutionContext, RateLimitDenial][] = [];
    const { responses } = responsesFor({
      limitedResponse: (context, denial) => (
        seen.push([context, denial]),
        { wait: denial.retryAfter }
      ),
    });
    const denial = responses.limited(CONTEXT, DECISION, MESSAGE, 7);
    expect([denial.message, denial.getResponse()]).toEqual([MESSAGE, { wait: 7 }]);
    expect(seen[0]).toEqual([
      CONTEXT,
      { status: 429, retryAfter: 7, message: MESSAGE, decision: DECISION },
    ]);
  });

  it('sends the default body when the function throws, and logs why at most every 5 s', () => {
    const { responses, warnings } = responsesFor({
      limitedResponse: () => {
        throw new Error('template missing');
      },
    });
    expect(responses.limited(CONTEXT, DECISION, MESSAGE, 7).getResponse()).toEqual(
      defaultBody(MESSAGE),
    );
    expect(warnings).toEqual(['limitedResponse failed (template missing); sent the default body']);
  });
});

describe('DenialResponses: the 503', () => {
  const failure = () => {
    const cause = new Error('connection reset');
    return { cause, error: new RateLimitUnavailableException('Store down', 3, cause) };
  };

  it('is the failure itself without options', () => {
    const { error } = failure();
    expect(responsesFor({}).responses.unavailable(CONTEXT, error)).toBe(error);
  });

  it('takes an unavailableResponse string as its message, keeping retryAfter and cause', () => {
    const { cause, error } = failure();
    const answer = responsesFor({ unavailableResponse: 'Try later' }).responses.unavailable(
      CONTEXT,
      error,
    );
    expect([answer.getStatus(), answer.message, answer.retryAfter, answer.cause]).toEqual([
      503,
      'Try later',
      3,
      cause,
    ]);
  });

  it('takes the body an unavailableResponse function makes, or the default if it throws', () => {
    const { cause, error } = failure();
    const seen: RateLimitDenial[] = [];
    const made = responsesFor({
      unavailableResponse: (_, denial) => (seen.push(denial), 'later, please'),
    }).responses.unavailable(CONTEXT, error);
    expect([made.message, made.getResponse(), made.retryAfter, made.cause]).toEqual([
      'Store down',
      'later, please',
      3,
      cause,
    ]);
    expect(seen).toEqual([{ status: 503, retryAfter: 3, message: 'Store down', error: cause }]);
    const { responses, warnings } = responsesFor({
      unavailableResponse: () => {
        throw 'no body';
      },
    });
    expect(responses.unavailable(CONTEXT, error).getResponse()).toEqual(error.getResponse());
    expect(warnings).toEqual(['unavailableResponse failed (no body); sent the default body']);
  });
});
