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
