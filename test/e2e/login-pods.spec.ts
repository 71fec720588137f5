import { OUTCOME_HEADER } from '../support/pods/pod-config.js';
import { type PodFleet, type ResponseRecord, startPodFleet } from '../support/pods/pod-fleet.js';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';

const POD_COUNT = 6;
/** Failed attempts allowed per account and window. */
const LIMIT = 20;
const WINDOW_MS = 1_000;
const ATTEMPTS = 1_000;
const BATCH = 50;
/** A batch starts every PACE_MS (or when the last ends): the run spans a few windows. */
const PACE_MS = 200;
/**
 * One attempt in twenty has the right password: 5%, the first of each twenty, so that a
 * burst's successes come early in it and are often admitted before its failures fill the
 * window (where they count unless given back).
 */
const succeeds = (attempt: number) => attempt % 20 === 0;

interface Attempt extends ResponseRecord {
  readonly success: boolean;
}

/**
 * The window a store decision fell in, from the pod-clock instants that bracket it (the pods
 * share the machine's clock with Redis, whose TIME the script reads); undefined when they
 * straddle a boundary.
 */
function windowOf({ decisionStartedAt, decisionEndedAt }: ResponseRecord): number | undefined {
  const first = Math.floor(decisionStartedAt! / WINDOW_MS);
  return first === Math.floor(decisionEndedAt! / WINDOW_MS) ? first : undefined;
}

/**
 * A login limited to 20 failed attempts per account and window, counted by outcome
 * (`count: 'failed'`) across six pods on one Redis: each attempt is charged before its
 * handler, atomically, and a success is given back after its response. Whatever the
 * interleaving, every window admits exactly 20 failures; successes pass until then, and
 * none after.
 */
describe(`${POD_COUNT} pods: a login counting failed attempts`, () => {
  let redis: RedisServer;
  let fleet: PodFleet;
  beforeAll(async () => {
    redis = await startRedisServer();
    fleet = await startPodFleet({
      pods: POD_COUNT,
      config: {
        variant: 'library',
        redisUrl: redis.url,
        prefix: 'login-pods',
        routes: {
          login: { algorithm: 'fixed-window', limit: LIMIT, windowMs: WINDOW_MS, count: 'failed' },
        },
      },
    });
  }, 120_000);
  afterAll(async () => {
    await fleet?.stop();
    await redis?.stop();
  });

  it.each([
    ['one at a time', 1],
    ['in parallel bursts of 50', BATCH],
  ])(
    '1,000 attempts for one account, %s: exactly 20 failures admitted per window',
    async (_mode, concurrency) => {
      const attempts: Attempt[] = [];
      for (let batch = 0; batch < ATTEMPTS / BATCH; batch++) {
        const startedAt = performance.now();
        const report = await fleet.fire({
          route: 'login',
          clientKey: `account-${concurrency}`,
          requests: BATCH,
          concurrency,
          headers: (i): Record<string, string> =>
            succeeds(batch * BATCH + i) ? { [OUTCOME_HEADER]: 'success' } : {},
        });
        for (const response of report.responses) {
          attempts.push({ ...response, success: succeeds(batch * BATCH + response.index) });
        }
        const left = PACE_MS - (performance.now() - startedAt);
        if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
      }

      // Admitted successes answer 200, admitted failures 401, denials 429: nothing else.
      for (const { status, success } of attempts) {
        expect({ success, status }).toEqual({
          success,
          status: status === 429 ? 429 : success ? 200 : 401,
        });
      }
      const decided = attempts.filter((attempt) => attempt.decisionEndedAt !== undefined);
      const windows = new Map<number, Attempt[]>();
      /** Admitted failures decided across a window's start: either window's. */
      const straddling = new Map<number, number>();
      for (const attempt of decided) {
        const window = windowOf(attempt);
        if (window === undefined) {
          if (attempt.status !== 401) continue;
          const next = Math.floor(attempt.decisionEndedAt! / WINDOW_MS);
          straddling.set(next, (straddling.get(next) ?? 0) + 1);
          continue;
        }
        windows.set(window, [...(windows.get(window) ?? []), attempt]);
      }
      const indices = [...windows.keys()].sort((a, b) => a - b);
      // The run's first and last windows are partly outside it; those between, entirely in.
      const whole = indices.slice(1, -1);
      expect(whole.length).toBeGreaterThanOrEqual(2);
      for (const window of indices) {
        const admitted = windows.get(window)!.filter((attempt) => attempt.status !== 429);
        const failures = admitted.filter((attempt) => !attempt.success);
        expect(failures.length).toBeLessThanOrEqual(LIMIT);
        if (!whole.includes(window)) continue;
        const mayBeHers = (straddling.get(window) ?? 0) + (straddling.get(window + 1) ?? 0);
        expect(failures.length + mayBeHers).toBeGreaterThanOrEqual(LIMIT);
        if (failures.length < LIMIT) continue;
        // The 20th failure charged: no success is admitted after it in this window.
        const full = Math.max(...failures.map((attempt) => attempt.decisionEndedAt!));
        for (const success of admitted.filter((attempt) => attempt.success)) {
          expect(success.decisionStartedAt).toBeLessThan(full);
        }
        if (concurrency > 1) continue;
        // One at a time, nothing else is in flight: a success is denied only after then.
        const denied = windows
          .get(window)!
          .filter((attempt) => attempt.success && attempt.status === 429);
        for (const success of denied)
          expect(success.decisionStartedAt).toBeGreaterThanOrEqual(full);
      }
      // Successes were admitted, and given back: more admitted than the limit in all.
      const admittedSuccesses = decided.filter((attempt) => attempt.status === 200).length;
      expect(admittedSuccesses).toBeGreaterThan(0);
    },
    60_000,
  );
});
