/**
 * Keys noted per generation: this store holds the last two generations, so between 10,000
 * and 20,000 keys. Forgetting costs a key one call more on its next decision, never a
 * different answer.
 */
const GENERATION_SIZE = 10_000;

/**
 * The lone fixed windows' keys this store has seen Redis charge or deny, each until its
 * window ends as that reply put it: which opening of lua/fixed-window-first.lua to send.
 * A key noted here is most likely still in its window (charged first: one INCRBY); any
 * other most likely new in it (written first: one SET ... NX GET). Both openings answer
 * alike whatever Redis holds, so a wrong guess (another pod charged the key, or it was
 * reset) costs one call more, and this needs no more than the process's own clock.
 * Bounded by generations rather than by evicting the oldest key: a Map whose first keys
 * are deleted one by one walks their holes to find the next first.
 */
export class ChargedKeys {
  private current = new Map<string, number>();
  private previous = new Map<string, number>();

  constructor(private readonly now: () => number = performance.now.bind(performance)) {}

  /** Whether `key` was seen in a window that has not ended. */
  has(key: string): boolean {
    const end = this.current.get(key) ?? this.previous.get(key);
    return end !== undefined && this.now() < end;
  }

  /** `key` holds a count until `resetMs` after now. */
  note(key: string, resetMs: number): void {
    if (this.current.size >= GENERATION_SIZE && !this.current.has(key)) {
      this.previous = this.current;
      this.current = new Map();
    }
    this.current.set(key, this.now() + resetMs);
  }
}
