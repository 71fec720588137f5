/**
 * Values by the time they end, earliest first: a binary min-heap, so that a table of many
 * keys finds what ends next, and adds to it, in O(log n) rather than a scan.
 */
export class EndQueue<T> {
  private readonly ends: number[] = [];
  private readonly values: T[] = [];

  /** When the earliest value ends; Infinity when there is none. */
  get next(): number {
    return this.ends.length === 0 ? Infinity : this.ends[0];
  }

  push(end: number, value: T): void {
    let at = this.ends.length;
    this.ends.push(end);
    this.values.push(value);
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (this.ends[parent] <= end) break;
      this.move(parent, at);
      at = parent;
    }
    this.ends[at] = end;
    this.values[at] = value;
  }

  /** Takes out the value that ends first; undefined when there is none. */
  pop(): T | undefined {
    const count = this.ends.length;
    if (count === 0) return undefined;
    const first = this.values[0];
    const end = this.ends.pop()!;
    const value = this.values.pop()!;
    const size = count - 1;
    if (size === 0) return first;
    let at = 0;
    for (;;) {
      let child = 2 * at + 1;
      if (child >= size) break;
      if (child + 1 < size && this.ends[child + 1] < this.ends[child]) child++;
      if (this.ends[child] >= end) break;
      this.move(child, at);
      at = child;
    }
    this.ends[at] = end;
    this.values[at] = value;
    return first;
  }

  clear(): void {
    this.ends.length = 0;
    this.values.length = 0;
  }

  private move(from: number, to: number): void {
    this.ends[to] = this.ends[from];
    this.values[to] = this.values[from];
  }
}
