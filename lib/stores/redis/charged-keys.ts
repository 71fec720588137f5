/**
 * Keys this store holds at most; past this, the one noted first is forgotten. Forgetting
 * costs a key one call more on its next decision, never a different answer.
 */
const KEYS_KEPT = 10_000;

/**
 * The lone fixed windows' keys this store has seen Redis charge or deny, each until its
 * window ends as that reply put it: which opening of lua/fixed-window-first.lua to send.
 * A key noted here is most likely still in its window (charged first: one INCRBY); any
 * other most likely new in it (written first: one SET ... NX GET). Both openings answer
 * alike whatever Redis holds, so a wrong guess (another pod charged the key, or it was
 * reset) costs one call more, and this needs no more than the process's own clock.
 */
export class ChargedKeys {
  private readonly windowEnds = new Map<string, number>();

  constructor(private readonly now: () => number = performance.now.bind(performance)) {}

  /** Whether `key` was seen in a window that has not ended. */
  has(key: string): boolean {
    const end = this.windowEnds.get(key);
    return end !== undefined && this.now() < end;
  }

  /** `key` holds a count until `resetMs` after now. */
  note(key: string, resetMs: number): void {
    const { windowEnds } = this;
    if (!windowEnds.has(key) && windowEnds.size >= KEYS_KEPT) {
      windowEnds.delete(windowEnds.keys().next().value!);
    }
    windowEnds.set(key, this.now() + resetMs);
  }
}
