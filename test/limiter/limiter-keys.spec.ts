import { RateLimiter } from '../../lib/limiter/rate-limiter.service.js';
import type { RateLimitPolicy } from '../../lib/interfaces/rate-limit-policy.interface.js';
import { resolveOptions } from '../../lib/config/resolved-options.js';
import { resolvePolicies } from '../../lib/config/resolved-policy.js';
import { KeyRecordingStore } from '../support/limiters.js';

// The limiter reuses the last call's store keys when a call repeats its client keys and
// policies: a call that differs in either, even through an array changed in place, must not.
describe('store keys of successive calls', () => {
  const minute: RateLimitPolicy = { name: 'minute', limit: 5, window: '1m' };
  const hour: RateLimitPolicy = { name: 'hour', limit: 50, window: '1h' };

  it('follow the client key and the policies, arrays changed in place included', async () => {
    const store = new KeyRecordingStore();
    const limiter = new RateLimiter(resolveOptions({ prefix: 'p' }), store);
    try {
      const policies = [minute];
      await limiter.consume('alice', policies);
      await limiter.consume('alice', policies);
      await limiter.consume('bob', policies);
      policies[0] = hour;
      await limiter.consume('bob', policies);
      const resolved = resolvePolicies([minute], { label: 'test', defaultScope: 'global' });
      const clientKeys = ['carol'];
      await limiter.decide('consume', clientKeys, resolved, [1]);
      clientKeys[0] = 'dave';
      await limiter.decide('consume', clientKeys, resolved, [1]);
      expect(store.keys.map((key) => key.replace(/^p:\{([^}]+)\}:(\w+).*$/, '$1 $2'))).toEqual([
        'alice minute',
        'alice minute',
        'bob minute',
        'bob hour',
        'carol minute',
        'dave minute',
      ]);
    } finally {
      await store.close();
    }
  });
});
