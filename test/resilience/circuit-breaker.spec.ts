import { CircuitBreaker } from '../../lib/resilience/circuit-breaker.js';

describe('CircuitBreaker', () => {
  let now = 0;
  let changes: boolean[];
  let breaker: CircuitBreaker;
  beforeEach(() => {
    now = 0;
    changes = [];
    breaker = new CircuitBreaker(
      { failures: 3, halfOpenAfter: 500 },
      (open) => changes.push(open),
      () => now,
    );
  });
  const failTimes = (n: number) => {
    for (let i = 0; i < n; i++) breaker.failed(breaker.pass());
  };

  it('opens after `failures` failures in a row, and a success in between starts the count again', () => {
    failTimes(2);
    breaker.succeeded();
    failTimes(2);
    expect(breaker.isOpen).toBe(false);
    expect(breaker.pass()).toBe('closed');
    failTimes(1);
    expect(breaker.isOpen).toBe(true);
    expect(changes).toEqual([true]);
  });

  it('while open refuses every call, then lets exactly one probe through per interval', () => {
    failTimes(3);
    now = 499;
    expect(breaker.pass()).toBe('refused');
    now = 500;
    expect(breaker.pass()).toBe('probe');
    expect(breaker.pass()).toBe('refused');
    breaker.failed('probe');
    now = 999;
    expect(breaker.pass()).toBe('refused');
    now = 1_000;
    expect(breaker.pass()).toBe('probe');
    expect(changes).toEqual([true]);
  });

  it('closes when the probe succeeds', () => {
    failTimes(3);
    now = 600;
    expect(breaker.pass()).toBe('probe');
    breaker.succeeded();
    expect(breaker.isOpen).toBe(false);
    expect(breaker.pass()).toBe('closed');
    expect(changes).toEqual([true, false]);
  });

  it('ignores failures of calls sent before it opened, which must not restart the interval', () => {
    failTimes(3);
    now = 400;
    breaker.failed('closed');
    now = 500;
    expect(breaker.pass()).toBe('probe');
    expect(changes).toEqual([true]);
  });
});
