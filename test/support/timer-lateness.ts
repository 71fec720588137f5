/**
 * Starts watching how late this process's timers run; the returned function stops and gives
 * the longest a 5 ms interval fired late meanwhile, in ms: a timer-kept bound holds within it.
 */
export function watchTimerLateness(): () => number {
  let latest = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    latest = Math.max(latest, now - last - 5);
    last = now;
  }, 5);
  return () => {
    clearInterval(timer);
    return Math.max(latest, performance.now() - last - 5);
  };
}
