import { createHash } from 'node:crypto';
import type {
  DecideRequest,
  GiveBackRequest,
  LeaseTerms,
  RefundRequest,
  StoreDecision,
} from '../../interfaces/rate-limit-store.interface.js';
import { isNoScript, type RedisClientPort } from './clients/redis-client-port.js';
import {
  LEASE_RETURN_SCRIPT,
  REFUND_SCRIPT,
  giveBackArguments,
  refundArguments,
} from './give-back-script.js';
import {
  composeLeaseScript,
  leaseArguments,
  leaseScriptId,
  leaseVariant,
  parseLeaseReply,
} from './lease-script.js';

interface Script {
  readonly lua: string;
  readonly sha: string;
  /** Sent with EVAL on the current connection. */
  loaded: boolean;
}

const scriptOf = (lua: string): Script => ({
  lua,
  sha: createHash('sha1').update(lua).digest('hex'),
  loaded: false,
});

/**
 * RedisStore's scripts beside its decisions: leased decisions, and the give-backs of leases
 * and of refunds. EVALSHA of their scripts, EVAL the first
 * time on a connection and again on NOSCRIPT, as the store does for decisions.
 */
export class LeaseScripts {
  /** By leaseScriptId: a few combinations of algorithms at most. */
  private readonly decisions = new Map<string, Script>();
  private readonly giveBackScript = scriptOf(LEASE_RETURN_SCRIPT);
  private readonly refundScript = scriptOf(REFUND_SCRIPT);

  constructor(private readonly send: RedisClientPort['script']) {}

  decide(request: DecideRequest, terms: LeaseTerms): Promise<StoreDecision> {
    const variant = leaseVariant(request);
    const id = leaseScriptId(request.policies, variant);
    let script = this.decisions.get(id);
    if (script === undefined) {
      script = scriptOf(composeLeaseScript(request.policies, variant));
      this.decisions.set(id, script);
    }
    return this.run(script, leaseArguments(request, terms, variant, [])).then((reply) =>
      parseLeaseReply(reply as (number | string)[]),
    );
  }

  giveBack(request: GiveBackRequest): Promise<number> {
    return this.run(this.giveBackScript, giveBackArguments(request)).then(Number);
  }

  /** One request's keys, all under one hash tag. */
  async refund(request: RefundRequest): Promise<void> {
    await this.run(this.refundScript, refundArguments(request));
  }

  /** A new connection may reach a server without the scripts. */
  forgetLoaded(): void {
    for (const script of this.decisions.values()) script.loaded = false;
    this.giveBackScript.loaded = false;
    this.refundScript.loaded = false;
  }

  private run(script: Script, args: (string | number)[]): Promise<unknown> {
    if (!script.loaded) {
      script.loaded = true;
      return this.send('eval', [script.lua, ...args]);
    }
    return this.send('evalsha', [script.sha, ...args]).catch((error: unknown) => {
      if (!isNoScript(error)) throw error;
      return this.send('eval', [script.lua, ...args]);
    });
  }
}
