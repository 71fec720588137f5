import { EndQueue } from '../../lib/limiter/end-queue.js';
import { seededRandom } from '../support/seeded-random.js';

/** The lease ends' heap against a sorted list, on random pushes and pops. */
describe('EndQueue', () => {
  it.each([1, 2, 3])('seed %d: pops in order of end, whatever the pushes', (seed) => {
    const random = seededRandom(seed);
    const queue = new EndQueue<number>();
    const sorted: number[] = [];
    for (let step = 0; step < 2_000; step++) {
      if (random() < 0.6) {
        const end = Math.floor(random() * 100);
        queue.push(end, end);
        sorted.push(end);
        sorted.sort((a, b) => a - b);
      } else {
        expect(queue.pop()).toBe(sorted.shift());
      }
      expect(queue.next).toBe(sorted[0] ?? Infinity);
    }
    queue.clear();
    expect(queue.pop()).toBeUndefined();
  });
});
