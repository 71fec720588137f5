/**
 * The import rules of lib/ (docs/architecture.md draws them). `npm run lint` fails on any
 * violation. Type-only imports count: a cycle through `import type` still ties the files.
 *
 * Layers, each importing only those below it:
 *   the Nest surface (lib/*.ts: module, decorators, filter, index)
 *   guard -> limiter -> resilience -> stores -> config -> observability
 *   the shared leaves: lib/rate-limit.constants.ts, lib/rate-limit.exceptions.ts
 *   interfaces (public types; imports nothing of lib/)
 * Beside them, lib/throttler (the nestjs-redis-rate-limiter/throttler entry, a storage for
 * @nestjs/throttler): it may import resilience and what lies below; nothing imports it.
 */
const LAYERS = [
  'guard',
  'limiter',
  'resilience',
  'stores',
  'config',
  'observability',
  'leaves',
  'interfaces',
];
const LEAVES = '^lib/rate-limit[.](constants|exceptions)[.]ts$';
const pathOf = (layer) => (layer === 'leaves' ? LEAVES : `^lib/${layer}/`);

/** A layer may not import the Nest surface nor any layer above it. */
const upward = LAYERS.map((layer, index) => ({
  name: `${layer}-imports-downward`,
  comment: `lib/${layer} imports only the layers below it: ${LAYERS.slice(index + 1).join(', ')}`,
  severity: 'error',
  from: { path: pathOf(layer) },
  to: {
    path: [
      '^lib/(index|rate-limit[.](module|module-definition|decorator|filter))[.]ts$',
      ...LAYERS.slice(0, index).map(pathOf),
    ],
  },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycle, type imports included.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...upward,
    {
      name: 'throttler-imports-resilience-and-below',
      comment:
        'lib/throttler uses resilience, stores, config and the layers below them, never the Nest surface, guard or limiter',
      severity: 'error',
      from: { path: '^lib/throttler/' },
      to: {
        path: '^lib/(index|rate-limit[.](module|module-definition|decorator|filter))[.]ts$|^lib/(guard|limiter)/',
      },
    },
    {
      name: 'nothing-imports-throttler',
      comment:
        'lib/throttler is an entry of its own (the throttler subpath): no other file of lib/ imports it',
      severity: 'error',
      from: { path: '^lib/', pathNot: '^lib/throttler/' },
      to: { path: '^lib/throttler/' },
    },
    {
      name: 'lib-stands-alone',
      comment: 'lib/ never imports the sample app, benchmarks or tests.',
      severity: 'error',
      from: { path: '^lib/' },
      to: { path: '^(sample|bench|test)/' },
    },
    {
      name: 'tests-need-no-bench',
      comment: 'Tests share harness code through test/support, never bench/.',
      severity: 'error',
      from: { path: '^test/' },
      to: { path: '^bench/' },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist)/|^test/compat/[^/]+/' },
  },
};
