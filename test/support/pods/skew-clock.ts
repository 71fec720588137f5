/**
 * Preloaded with `node --import` into a pod to fake a server whose clock is off: shifts
 * `Date.now()` by POD_CLOCK_SKEW_MS. The limiter's `clock: 'local'` reads Date.now(), so
 * this is exactly the clock that option trusts; `clock: 'redis'` must not care.
 */
import { CLOCK_SKEW_ENV } from './pod-config.js';

const skewMs = Number(process.env[CLOCK_SKEW_ENV] ?? 0);
if (!Number.isFinite(skewMs)) throw new Error(`${CLOCK_SKEW_ENV} must be a number of ms`);
const realNow = Date.now.bind(Date);
Date.now = () => realNow() + skewMs;
