import type { Redis } from 'ioredis';
import type { RateLimitPolicy } from '../../../lib/index.js';
import { resolvePolicies } from '../../../lib/config/resolved-policy.js';
import type { ScriptVariant } from '../../../lib/stores/redis/lua-script.js';
import { composeLeaseScript, leaseArguments } from '../../../lib/stores/redis/lease-script.js';
import type { ResolvedPolicy } from '../../../lib/interfaces/resolved-policy.interface.js';
import { describeOnServers, useRedisServer } from '../../support/redis-fixture.js';
import { seededRandom } from '../../support/seeded-random.js';
import { AS_TRACE_TIME, CLOCK_KEY, OFFSET_KEY } from './trace-time.js';

/**
 * A lone leased policy's script (lua/lease-one.lua) must answer exactly as lua/lease.lua,
 * the entry of every leased route, does for that policy: random traces of (time, policy,
 * cost, lease size, units held and their window, mode), on the caller's clock (the general
 * prelude) and on Redis TIME (the consume prelude, made the trace's time by the stub), each
 * script on keys of its own; every reply must match field for field, and every key the same
 * state and expiry.
 */
const SEEDS = [1, 2, 3, 4];
const STEPS = 300;

function randomPolicy(next: () => number, n: number): ResolvedPolicy {
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)];
  const limit = pick([3, 10, 50]);
  const policy: RateLimitPolicy = {
    name: `p${n}`,
    algorithm: pick(['fixed-window', 'sliding-window-counter', 'token-bucket'] as const),
    limit,
    window: pick([100, 250, 1_000]),
    burst: pick([undefined, limit * 2]),
  };
  return resolvePolicies([policy], { label: `policy ${n}`, defaultScope: 'global' })[0];
}

describeOnServers((server) =>
  describe('a lone leased policy answers as every leased route does', () => {
    const redis = useRedisServer({ server });
    const scripts = new Map<string, string>();
    const run = (
      admin: Redis,
      tables: boolean,
      variant: ScriptVariant,
      policy: ResolvedPolicy,
      request: { cost: number; size: number; held: number; heldWindow: number },
      mode: 'consume' | 'peek',
      now: number,
    ) => {
      const id = `${tables}:${variant}:${policy.algorithm}`;
      let lua = scripts.get(id);
      if (!lua) {
        lua = AS_TRACE_TIME + composeLeaseScript([policy], variant, tables);
        scripts.set(id, lua);
      }
      const args = leaseArguments(
        {
          mode,
          keys: [`${tables ? 'tables' : 'one'}:{client}${policy.keySuffix}`],
          policies: [policy],
          costs: [request.cost],
          now: variant === 'consume' ? undefined : now,
          ttlFloorMs: 0,
          wantedUntil: undefined,
        },
        { sizes: [request.size], held: [request.held], heldWindows: [request.heldWindow] },
        variant,
        [],
      );
      return admin.eval(lua, ...(args as [number, ...string[]]));
    };
    const stateOf = async (admin: Redis, tables: boolean, policy: ResolvedPolicy) => {
      const key = `${tables ? 'tables' : 'one'}:{client}${policy.keySuffix}`;
      const [state, expiry] = await Promise.all([admin.get(key), admin.call('PEXPIRETIME', key)]);
      return { state, expiry };
    };

    it.each(SEEDS)('trace with seed %i', async (seed) => {
      const { admin } = redis;
      await admin.flushall();
      const next = seededRandom(seed);
      const policies = Array.from({ length: 4 }, (_, n) => randomPolicy(next, n));
      let now = 1_700_000_000_000 + Math.floor(next() * 10_000);
      await admin.set(OFFSET_KEY, Date.now() - now + 3_600_000);
      let granted = 0;
      for (let step = 0; step < STEPS; step++) {
        now += next() < 0.4 ? 0 : Math.floor(next() < 0.9 ? next() * 60 : next() * 1_500);
        await admin.set(CLOCK_KEY, now);
        const policy = policies[Math.floor(next() * policies.length)];
        const window = Number(policy.scriptArgs[1]);
        const cost = 1 + Math.floor(next() * 3);
        const request = {
          cost,
          // Not leased, a lease below the cost (decided as without one), or up to the limit.
          size: next() < 0.2 ? 0 : 1 + Math.floor(next() * policy.limit),
          held: next() < 0.5 ? 0 : Math.floor(next() * cost),
          heldWindow: Math.floor(now / window) - (next() < 0.3 ? 1 : 0),
        };
        const variant: ScriptVariant = next() < 0.5 ? 'consume' : 'general';
        const mode = variant === 'consume' || next() < 0.7 ? 'consume' : 'peek';
        const [tables, one] = await Promise.all(
          [true, false].map((t) => run(admin, t, variant, policy, request, mode, now)),
        );
        expect({ step, reply: one }).toEqual({ step, reply: tables });
        if (Number((tables as number[])[6]) > 0) granted++;
        expect({ step, state: await stateOf(admin, false, policy) }).toEqual({
          step,
          state: await stateOf(admin, true, policy),
        });
      }
      // Leases were granted on many steps, so the charging pass was compared too.
      expect(granted).toBeGreaterThan(STEPS / 10);
    });
  }),
);
