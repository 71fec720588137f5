const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/;

/** Milliseconds from a number of ms or a duration such as '250ms', '10s', '1.5m'; undefined if invalid. */
export function parseWindow(window: unknown): number | undefined {
  let ms: number | undefined;
  if (typeof window === 'number') {
    ms = window;
  } else if (typeof window === 'string') {
    const match = DURATION.exec(window.trim());
    if (match) ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  }
  return ms !== undefined && Number.isFinite(ms) && ms > 0 ? ms : undefined;
}
