import type { Logger } from '@nestjs/common';

/**
 * Logs a recurring warning at most once per interval, with how many were held back, so a
 * Redis outage under load yields a line every few seconds rather than one per request.
 */
export class ThrottledLog {
  private lastAt = -Infinity;
  private heldBack = 0;

  constructor(
    private readonly logger: Logger,
    private readonly intervalMs = 5_000,
  ) {}

  warn(message: string): void {
    const now = Date.now();
    if (now - this.lastAt < this.intervalMs) {
      this.heldBack++;
      return;
    }
    const suffix = this.heldBack > 0 ? ` (${this.heldBack} more since the last report)` : '';
    this.lastAt = now;
    this.heldBack = 0;
    this.logger.warn(message + suffix);
  }
}
