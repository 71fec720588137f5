import { describeFailureModes, strictestFailureMode } from '../../lib/config/failure-mode.js';
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

describe('describeFailureModes', () => {
  it("names the module's mode, then each other mode with its routes", () => {
    expect(describeFailureModes('open', new Map(), undefined)).toBe("failureMode 'open'");
    expect(
      describeFailureModes(
        'open',
        new Map([
          ['closed', ['AuthController.login', 'AdminController.purge']],
          ['local', ['SearchController.find']],
        ]),
        3,
      ),
    ).toBe(
      "failureMode 'open' ('closed' on AuthController.login, AdminController.purge; 'local' at 1/3 of each limit on SearchController.find)",
    );
    expect(describeFailureModes('local', new Map([['local', ['A.b']]]), 2)).toBe(
      "failureMode 'local' at 1/2 of each limit",
    );
  });

  it('counts the routes past the fifth', () => {
    const routes = Array.from({ length: 7 }, (_, i) => `C.r${i}`);
    expect(describeFailureModes('closed', new Map([['open', routes]]), undefined)).toBe(
      "failureMode 'closed' ('open' on C.r0, C.r1, C.r2, C.r3, C.r4 and 2 more)",
    );
  });
});
