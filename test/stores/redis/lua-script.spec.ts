import type { RateLimitPolicy } from '../../../lib/interfaces/rate-limit-policy.interface.js';
import { resolvePolicies } from '../../../lib/config/resolved-policy.js';
import {
  type InlinedValues,
  composeDecideScript,
  type ScriptVariant,
} from '../../../lib/stores/redis/lua-script.js';
import { LUA_SOURCES } from '../../../lib/stores/redis/lua-sources.generated.js';

/** What the store's scripts are made of, as the README's cost section says. */
describe('composeDecideScript', () => {
  const route = (...policies: RateLimitPolicy[]) =>
    resolvePolicies(policies, { label: 'test', defaultScope: 'global' });
  const lone = { name: 'a', algorithm: 'token-bucket', limit: 5, window: 1_000 } as const;
  const other = { name: 'b', algorithm: 'fixed-window', limit: 5, window: 1_000 } as const;
  const routes = {
    lone: [lone],
    'two policies': [lone, other],
  };
  const variants: ScriptVariant[] = ['consume', 'general'];
  const inlinings: InlinedValues[] = ['none', 'values', 'all'];

  it.each(Object.entries(routes))(
    'reads a block only in the scripts of routes with a blockDuration policy (%s)',
    (_, policies) => {
      const costs = policies.map(() => 1);
      for (const variant of variants) {
        for (const inlined of inlinings) {
          const plain = composeDecideScript(route(...policies), variant, inlined, costs);
          const blocking = composeDecideScript(
            route({ ...policies[0], blockDuration: 60_000 }, ...policies.slice(1)),
            variant,
            inlined,
            costs,
          );
          expect(plain).not.toContain(LUA_SOURCES.block);
          expect(plain).not.toContain('with_block');
          expect(blocking).toContain(LUA_SOURCES.block);
        }
      }
    },
  );
});
