/**
 * What limits per request cost the guard: CPU per decision (process.cpuUsage, user +
 * system) of RateLimitGuard.canActivate on the embedded store, in process (no HTTP, no
 * Redis: the guard's own work), for one route with a numeric limit, one whose limit is a
 * synchronous function and one whose limit is an async function. The routes are measured
 * round by round, interleaved, and the median round is reported.
 *
 *   npm run build && node dist/bench/per-request-limits.js
 *   LIMITS_BENCH_CALLS (100000 per route and round), LIMITS_BENCH_ROUNDS (7) to tune
 */
import 'reflect-metadata';
import { Controller, type ExecutionContext, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { RateLimit, RateLimitGuard, RateLimitModule } from '../lib/index.js';

const CALLS = Number(process.env.LIMITS_BENCH_CALLS ?? 100_000);
const ROUNDS = Number(process.env.LIMITS_BENCH_ROUNDS ?? 7);
/** Never reached: every decision admits and charges. */
const ROOMY = 1_000_000_000;

@Controller()
class Routes {
  @Get('fixed')
  @RateLimit({ limit: ROOMY, window: '1h' })
  fixed() {}

  @Get('sync')
  @RateLimit({ limit: () => ROOMY, window: '1h' })
  sync() {}

  @Get('async')
  @RateLimit({ limit: async () => ROOMY, window: '1h' })
  async() {}
}

@Module({
  imports: [RateLimitModule.forRoot({ keyBy: () => 'one-client', headers: 'none' })],
  controllers: [Routes],
})
class BenchModule {}

const app = await NestFactory.createApplicationContext(BenchModule, { logger: false });
await app.init();
const guard = app.get(RateLimitGuard);

/** What the guard reads of an HTTP request's context (no response: headers are off). */
const contextOf = (handler: () => unknown) =>
  ({
    getType: () => 'http',
    getHandler: () => handler,
    getClass: () => Routes,
    switchToHttp: () => ({ getRequest: () => ({}), getResponse: () => undefined }),
  }) as unknown as ExecutionContext;
const ROUTES = {
  fixed: contextOf(Routes.prototype.fixed),
  sync: contextOf(Routes.prototype.sync),
  async: contextOf(Routes.prototype.async),
};
type Route = keyof typeof ROUTES;

/** CPU µs per decision on `route`. */
async function measure(route: Route): Promise<number> {
  const context = ROUTES[route];
  const start = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) await guard.canActivate(context);
  const { user, system } = process.cpuUsage(start);
  return (user + system) / CALLS;
}

const names = Object.keys(ROUTES) as Route[];
for (const name of names) await measure(name); // warm-up
const rounds: Record<Route, number[]> = { fixed: [], sync: [], async: [] };
for (let round = 0; round < ROUNDS; round++) {
  for (const name of names) rounds[name].push(await measure(name));
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1];
console.log('route (limit)  | CPU µs per decision, median of rounds');
for (const name of names) {
  console.log(`${name.padEnd(14)} | ${median(rounds[name]).toFixed(2)}`);
}
await app.close();
