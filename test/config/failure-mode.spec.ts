import { strictestFailureMode } from '../../lib/config/failure-mode.js';
import type { FailureMode } from '../../lib/interfaces/rate-limit-policy.interface.js';

const policies = (...modes: (FailureMode | undefined)[]) =>
  modes.map((failureMode) => ({ failureMode }));

describe('strictestFailureMode', () => {
  it.each([
    [[], 'open', 'open'],
    [[undefined], 'closed', 'closed'],
    [['open'], 'closed', 'open'],
    [['open', undefined], 'closed', 'closed'],
    [['local', 'open'], 'open', 'local'],
    [['open', 'closed', 'local'], 'open', 'closed'],
    [['local', undefined], 'closed', 'closed'],
    [['open', 'open'], 'local', 'open'],
  ] as const)('%p under a module in %s is %s', (modes, moduleMode, expected) => {
    expect(strictestFailureMode(policies(...modes), moduleMode)).toBe(expected);
  });
});
