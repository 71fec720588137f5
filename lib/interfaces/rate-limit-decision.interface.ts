/** How one policy judged a request. Times are in milliseconds. */
export interface PolicyResult {
  policy: string;
  /** Whether this policy alone would admit the request (an extension of the contract). */
  allowed: boolean;
  limit: number;
  /** The policy's window in ms (an extension of the contract: headers need it). */
  window: number;
  /**
   * The most `remaining` can ever be, which is also the largest cost the policy can ever
   * admit: `burst` for the buckets, `limit` for the windows (an extension of the contract).
   */
  capacity: number;
  /** Never negative. */
  remaining: number;
  /** Until the policy is fully replenished. */
  resetMs: number;
  /** 0 when allowed; else the earliest time a retry can succeed, all else unchanged. */
  retryAfterMs: number;
  /** Leaky bucket: how long to wait before proceeding; else 0 (always 0 for a shadow policy). */
  delayMs: number;
  /**
   * Set on a shadow policy's result: its `allowed` says what it would have decided, and
   * never counts in the decision's (an extension of the contract).
   */
  shadow?: true;
}

/** The verdict on one request: admitted only if every policy (shadow policies aside) admitted it. */
export interface RateLimitDecision {
  allowed: boolean;
  /** One per policy, in the order given. */
  results: PolicyResult[];
  /**
   * Set when this instance's deny cache answered, without asking the store (an extension
   * of the contract).
   */
  cached?: true;
  /**
   * Set when this pod decided from units it had leased, without asking the store
   * (`RateLimitPolicy.lease`; an extension of the contract).
   */
  leased?: true;
}
