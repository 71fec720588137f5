import type { Redis } from 'ioredis';
import { ALGORITHMS, type RateLimitPolicy } from '../../../lib/index.js';
import { resolvePolicies } from '../../../lib/config/resolved-policy.js';
import {
  type InlinedValues,
  composeDecideScript,
  keyCount,
  type ScriptMode,
  scriptArguments,
  type ScriptVariant,
} from '../../../lib/stores/redis/lua-script.js';
import { BLOCK_KEY_SUFFIX } from '../../../lib/stores/store-keys.js';
import { useRedisServer } from '../../support/redis-fixture.js';
import { seededRandom } from '../../support/seeded-random.js';
import { fixedWindowState } from './fixed-window-state.js';
import { AS_TRACE_TIME, CLOCK_KEY, OFFSET_KEY } from './trace-time.js';
import type { ResolvedPolicy } from '../../../lib/interfaces/resolved-policy.interface.js';

/**
 * The store's two shortcuts must answer exactly as the plain script does: a route's values
 * (and costs) written into its script as literals (InlinedValues 'values', 'all') rather than sent,
 * and lua/prelude-consume.lua, which reads Redis TIME and takes no mode, clock or TTL floor,
 * rather than lua/prelude.lua given the same time as the caller's clock, with a lone fixed
 * window's both openings there (lua/fixed-window-first.lua: charged first, written first). Random traces of
 * (time, policies, cost, mode) run through every form of the script, each on keys of its
 * own; every reply must match the plain one (InlinedValues 'none', prelude.lua) field for field, and
 * every key the same state and expiry (PEXPIRETIME). A stub put before every form's script makes Redis
 * TIME the trace's time (read from a key of the test), and makes every expiry absolute on
 * the trace's clock (PXAT, PEXPIREAT), shifted an hour past real time: so an expiry kept
 * from an earlier write (INCRBY) and one written again now compare as the scripts meant
 * them, and none passes while the test runs, whose keys are written milliseconds apart in
 * real time. A state past its use answers as no state, so that changes no answer. A fixed window's state is compared as [window index, count]: the
 * consume prelude writes it as an integer, the plain script as 'index:count'
 * (lua/fixed-window.lua); keys outliving their windows here test that the integer form tells
 * an earlier window's count from the current one's, and traces land on windows' first and
 * last ms.
 */
const SEEDS = [1, 2, 3, 4, 5, 6];
const STEPS = 250;

interface Form {
  readonly variant: ScriptVariant;
  readonly inlined: InlinedValues;
  /** The opening of a lone fixed window on the consume prelude (lua/fixed-window-first.lua). */
  readonly writtenFirst?: boolean;
}
const PLAIN: Form = { variant: 'general', inlined: 'none' };
const SHORTCUTS: readonly Form[] = [
  { variant: 'general', inlined: 'values' },
  { variant: 'general', inlined: 'all' },
  { variant: 'consume', inlined: 'none' },
  { variant: 'consume', inlined: 'values' },
  { variant: 'consume', inlined: 'all' },
  { variant: 'consume', inlined: 'none', writtenFirst: true },
  { variant: 'consume', inlined: 'all', writtenFirst: true },
];
const formName = ({ variant, inlined, writtenFirst }: Form) =>
  `${variant}/${inlined}${writtenFirst ? '/written first' : ''}`;

function randomRoute(next: () => number, route: number): ResolvedPolicy[] {
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)];
  const policies = Array.from({ length: 1 + Math.floor(next() * 3) }, (_, i): RateLimitPolicy => {
    const limit = pick([1, 2, 3, 5, 10]);
    return {
      name: `r${route}p${i}`,
      algorithm: pick(ALGORITHMS),
      limit,
      // A fraction of a ms too: its times are fractions, which some shortcuts leave to the plain path.
      window: pick([100, 250, 1_000, 7_000, 2.5]),
      burst: pick([undefined, 1, limit * 2]),
      blockDuration: pick([undefined, undefined, 150]),
    };
  });
  return resolvePolicies(policies, { label: `route ${route}`, defaultScope: 'global' });
}

const redis = useRedisServer();

describe('script shortcuts answer as the plain script', () => {
  const scripts = new Map<string, string>();
  /** EVAL of `form`'s script for this request, on keys under `namespace`. */
  const run = (
    admin: Redis,
    form: Form,
    namespace: string,
    policies: ResolvedPolicy[],
    costs: number[],
    mode: ScriptMode,
    now: number,
  ) => {
    const id = JSON.stringify([
      form,
      policies.map((p) => [p.keySuffix, p.blockMs, p.scriptArgs]),
      costs,
    ]);
    let lua = scripts.get(id);
    if (!lua) {
      lua =
        AS_TRACE_TIME +
        composeDecideScript(policies, form.variant, form.inlined, costs, form.writtenFirst);
      scripts.set(id, lua);
    }
    const request = {
      mode: mode === 'check' ? ('consume' as const) : mode,
      keys: policies.map((p) => `${namespace}:{client}${p.keySuffix}`),
      policies,
      costs,
      now: form.variant === 'consume' ? undefined : now,
      ttlFloorMs: 0,
      wantedUntil: undefined,
    };
    const args = scriptArguments(request, mode, form.variant, form.inlined);
    return admin.eval(lua, keyCount(policies), ...args);
  };

  /**
   * Every key under `namespace`, as DUMP holds it (state, type, encoding), and its expiry; a
   * fixed window's state as [window index, count] instead, since the consume prelude writes
   * it in another form (lua/fixed-window.lua). `integers` counts the keys in that form.
   */
  let integers = 0;
  const stateOf = async (
    admin: Redis,
    namespace: string,
    policies: ResolvedPolicy[],
    now: number,
  ) =>
    Promise.all(
      policies.flatMap((p) =>
        [p.keySuffix, p.keySuffix + BLOCK_KEY_SUFFIX].map(async (suffix) => {
          const key = `${namespace}:{client}${suffix}`;
          // Absolute, on the trace's clock (shifted): exact, however long the test takes.
          const ttl = (await admin.call('PEXPIRETIME', key)) as number;
          if (p.algorithm === 'fixed-window' && suffix === p.keySuffix) {
            const [type, value] = await Promise.all([admin.type(key), admin.get(key)]);
            if (value && !value.includes(':')) integers++;
            const window = Number(p.scriptArgs[1]);
            const state = value && fixedWindowState(value, Math.floor(now / window));
            return { suffix, type, state, ttl };
          }
          const dump = await admin.dumpBuffer(key);
          return { suffix, dump: dump?.toString('hex'), ttl };
        }),
      ),
    );

  it.each(SEEDS)('trace with seed %i', async (seed) => {
    const { admin } = redis;
    await admin.flushall();
    const next = seededRandom(seed);
    const routes = Array.from({ length: 4 }, (_, route) => randomRoute(next, route));
    let now = 1_700_000_000_000 + Math.floor(next() * 10_000);
    await admin.set(OFFSET_KEY, Date.now() - now + 3_600_000);
    let compared = 0;
    integers = 0;
    for (let step = 0; step < STEPS; step++) {
      const gap = next() < 0.4 ? 0 : next() < 0.9 ? next() * 120 : next() * 3_000;
      now += Math.floor(gap);
      const route = routes[Math.floor(next() * routes.length)];
      // A window's edges, where off-by-one mistakes live: its first ms, or its last.
      if (next() < 0.25) {
        const window = Number(route[Math.floor(next() * route.length)].scriptArgs[1]);
        // In whole ms, as Redis TIME reads: a window of a fraction of a ms starts within one.
        const edge = Math.ceil(Math.ceil(now / window) * window);
        now = next() < 0.5 || edge - 1 < now ? edge : edge - 1;
      }
      await admin.set(CLOCK_KEY, now);
      // Never more than a policy can ever admit: the limiter refuses that before any script.
      const maxCost = Math.min(...route.map((policy) => policy.maxCost));
      const costs = route.map(() => 1 + Math.floor(next() * Math.min(maxCost, 3)));
      const mode: ScriptMode = next() < 0.7 ? 'consume' : next() < 0.5 ? 'peek' : 'check';
      const plain = await run(admin, PLAIN, 'plain', route, costs, mode, now);
      for (const form of SHORTCUTS) {
        // The consume prelude serves consumes only, as the store uses it (variantFor); its
        // keys take the other modes from the plain script, and stay alike.
        const shortcut = form.variant === 'general' || mode === 'consume';
        const reply = await run(
          admin,
          shortcut ? form : PLAIN,
          formName(form),
          route,
          costs,
          mode,
          now,
        );
        if (shortcut) {
          expect({ step, form: formName(form), reply }).toEqual({
            step,
            form: formName(form),
            reply: plain,
          });
          compared++;
        }
      }
      const expected = await stateOf(admin, 'plain', route, now);
      for (const form of SHORTCUTS) {
        const state = await stateOf(admin, formName(form), route, now);
        expect({ step, form: formName(form), state }).toEqual({
          step,
          form: formName(form),
          state: expected,
        });
      }
    }
    // Each form's replies were compared on most steps.
    expect(compared).toBeGreaterThan(STEPS * 3);
    // The consume prelude's fixed window keys were in the integer form, on some steps.
    if (routes.some((route) => route.some((p) => p.algorithm === 'fixed-window'))) {
      expect(integers).toBeGreaterThan(STEPS / 10);
    }
  });
});
