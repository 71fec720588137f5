/** Polls `check` every `everyMs` until it holds; throws once `timeoutMs` have passed. */
export async function eventually(
  check: () => Promise<boolean>,
  timeoutMs = 8_000,
  everyMs = 50,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** An HTTP request's response, its status, and how long it took (ms). */
export async function timed(request: () => Promise<Response>) {
  const started = performance.now();
  const response = await request();
  return { status: response.status, response, ms: performance.now() - started };
}
