/** How often the store's clock is sampled, and how many samples are kept. */
const SAMPLE_EVERY_MS = 5_000;
const SAMPLES_KEPT = 6;

/**
 * This process's view of the store's real clock, to tell the store until when an answer is
 * wanted (`wantedUntil`). A sample reads the store's time t (whole ms) between sending at
 * monotonic instant a and receiving; the offset from `performance.now()` to the store's
 * clock is then below t + 1 − a. The bound errs on the side that keeps fresh decisions
 * fresh: a wantedUntil built on it is never earlier than the truth, and later by no more
 * than the best recent sample's round trip. The monotonic clock cannot jump, so a pod whose
 * wall clock is skewed or stepped changes nothing; the store's clock can, which is why
 * samples age out and an answer proven stale too early drops them (see `forget`).
 */
export class StoreClock {
  private readonly bounds: number[] = [];
  private offset: number | undefined;
  private nextSampleAt = 0;

  constructor(private readonly read: () => Promise<number>) {}

  /**
   * The store-clock epoch ms at monotonic instant `at` (never earlier than the truth), or
   * undefined while no sample has come back. `now`: the monotonic time, if the caller has it.
   */
  at(monotonic: number, now = performance.now()): number | undefined {
    if (now >= this.nextSampleAt) this.sample();
    return this.offset === undefined ? undefined : monotonic + this.offset;
  }

  /** Drops what it knew, proven wrong by an answer, and samples afresh. */
  forget(): void {
    this.bounds.length = 0;
    this.offset = undefined;
    this.sample();
  }

  /** At most one sample per interval, even if one hangs on a silent store. */
  private sample(): void {
    const sentAt = performance.now();
    this.nextSampleAt = sentAt + SAMPLE_EVERY_MS;
    let reading: Promise<number>;
    try {
      reading = this.read();
    } catch {
      return;
    }
    reading.then(
      (storeNow) => {
        this.bounds.push(storeNow + 1 - sentAt);
        if (this.bounds.length > SAMPLES_KEPT) this.bounds.shift();
        this.offset = Math.min(...this.bounds);
      },
      // Unknown for now: decisions go without wantedUntil until a sample succeeds.
      () => undefined,
    );
  }
}
