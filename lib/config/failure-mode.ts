import type { FailureMode } from '../interfaces/rate-limit-policy.interface.js';

/** Which mode wins on a route of several policies: closed over local over open. */
const STRICTNESS: Readonly<Record<FailureMode, number>> = { open: 0, local: 1, closed: 2 };

/**
 * The failure mode of a decision on `policies`: the strictest of theirs, each policy
 * without one of its own taking the module's.
 */
export function strictestFailureMode(
  policies: readonly { readonly failureMode: FailureMode | undefined }[],
  moduleMode: FailureMode,
): FailureMode {
  if (policies.length === 0) return moduleMode;
  let strictest: FailureMode = 'open';
  for (const { failureMode } of policies) {
    const mode = failureMode ?? moduleMode;
    if (STRICTNESS[mode] > STRICTNESS[strictest]) strictest = mode;
  }
  return strictest;
}

/** Routes named in a log line past this many are counted instead. */
const ROUTES_NAMED = 5;

/**
 * The failure modes in force, for a log line: the module's, then each other mode with the
 * routes it applies to (`routes`: by mode, those whose strictest policy mode is not the
 * module's), e.g. `failureMode 'open' ('closed' on AuthController.login)`.
 * @param instances set for 'local': each instance decides at 1/instances of each limit
 */
export function describeFailureModes(
  moduleMode: FailureMode,
  routes: ReadonlyMap<FailureMode, readonly string[]>,
  instances: number | undefined,
): string {
  const named = (mode: FailureMode) =>
    mode === 'local' ? `'local' at 1/${instances} of each limit` : `'${mode}'`;
  const others: string[] = [];
  for (const [mode, names] of routes) {
    if (mode === moduleMode || names.length === 0) continue;
    const more = names.length > ROUTES_NAMED ? ` and ${names.length - ROUTES_NAMED} more` : '';
    others.push(`${named(mode)} on ${names.slice(0, ROUTES_NAMED).join(', ')}${more}`);
  }
  const exceptions = others.length === 0 ? '' : ` (${others.join('; ')})`;
  return `failureMode ${named(moduleMode)}${exceptions}`;
}
