import { createHash } from 'node:crypto';
import type { ResolvedPolicy } from '../../interfaces/resolved-policy.interface.js';
import { BLOCK_KEY_SUFFIX } from '../store-keys.js';
import {
  type InlinedValues,
  composeDecideScript,
  costsAreStatic,
  isLoneFixedWindow,
  keyCount,
  scriptArguments,
  scriptIdOf,
  type ScriptMode,
  type ScriptVariant,
  variantFor,
} from './lua-script.js';
import type { RedisClientLike } from '../../interfaces/redis-client.interface.js';
import { clientPortOf } from './clients/client-port.js';
import { isNoScript, type RedisClientPort } from './clients/redis-client-port.js';
import { hashSlot } from './hash-slot.js';
import { LeaseScripts } from './lease-scripts.js';
import { WindowOpening } from './window-opening.js';
import type {
  DecideRequest,
  DecisionMode,
  GiveBackRequest,
  LeaseGrant,
  LeaseTerms,
  PolicyVerdict,
  RateLimitStore,
  RefundRequest,
  StoreDecision,
} from '../../interfaces/rate-limit-store.interface.js';
import { STALE_DECISION } from '../../interfaces/rate-limit-store.interface.js';

/**
 * Admitted, then per policy allowed, remaining, reset, wait (its retry if denied, else its
 * delay), a lone policy's without `admitted`; empty when the script started after
 * `wantedUntil`; for a lone policy admitted with no wait, one integer, remaining * 2^27 +
 * reset, when they fit (lua/prelude.lua, lua/decide-one.lua).
 */
type ScriptReply = (number | string)[] | number;

/**
 * Values per policy in a table reply: the client decodes each one, so retry and delay, never
 * both set, travel as one.
 */
const VERDICT_VALUES = 4;

/** The integer reply's unit of remaining: the resets it holds are below it. */
const RESET_SPAN = 2 ** 27;

/**
 * How many scripts may hold their route's values as literals (see InlinedValues): one per route and
 * variant, and per distinct limit a per-request limit gives, as long as they are few; past
 * this many, further ones take their values as arguments, so that neither Redis's script
 * cache nor this store's grows without bound with limits that vary per call.
 */
const INLINED_SCRIPTS_KEPT = 64;

/** A script composed for one route's policies, with its SHA1 for EVALSHA. */
interface DecideScript {
  readonly lua: string;
  readonly sha: string;
  /** What it holds as literals, so what the call must send. */
  readonly inlined: InlinedValues;
  /** How many of its arguments are keys (keyCount), as sent. */
  readonly keyCount: string;
  /** Sent with EVAL on the current connection, so that server has it cached. */
  loaded: boolean;
  /** A lone fixed window's, consumed on Redis TIME: which opening to send (WindowOpening). */
  readonly opening: WindowOpening<DecideScript> | undefined;
}

/**
 * Decides with one EVALSHA per request, whatever the number of policies, of a script made
 * for the route's algorithms (see composeDecideScript): EVAL the first time, and again on
 * NOSCRIPT, as ioredis' defineCommand does. Not defineCommand itself: an auto-pipeline copies
 * the defined commands when it is created, so a combination first used while one was
 * collecting commands was missing from it. The calls go out through the client's port
 * (clients/), the one place that knows each client library: ioredis, iovalkey, node-redis,
 * Valkey GLIDE.
 *
 * On Redis Cluster one script may only touch one slot. Keys of one client share a hash
 * tag, so that is the rule; only policies with their own `keyBy` can put one request's
 * keys under several tags, and those requests take the two-phase path of
 * `decideAcrossSlots` (see docs/cluster.md for what stays atomic there).
 */
export class RedisStore implements RateLimitStore {
  /** By variant, then by script id (scriptIdOf). */
  private readonly scripts: Record<ScriptVariant, Map<string, DecideScript>> = {
    consume: new Map(),
    general: new Map(),
  };
  /**
   * The last call's policies and script: a busy route decides on the same policies call
   * after call, and then no script id is made.
   */
  private readonly last: {
    policies: readonly ResolvedPolicy[];
    variant: ScriptVariant;
    staticCosts: boolean;
    script: DecideScript | undefined;
  } = { policies: [], variant: 'consume', staticCosts: true, script: undefined };
  private scriptsWithLiterals = 0;
  private readonly isCluster: boolean;
  private readonly port: RedisClientPort;
  /** The port's script call, kept: one load less on every decision. */
  private readonly send: RedisClientPort['script'];
  /** The arguments of the EVALSHA being sent: the port copies them, so one array serves every call. */
  private readonly args: (string | number)[] = [];
  /** Leased decisions and give-backs (docs/leases.md): scripts of their own. */
  private readonly leases: LeaseScripts;

  /**
   * The last error a client the store owns reported (NOAUTH, WRONGPASS, a refused
   * connection), until it is ready again: what a refusal names as the cause.
   */
  private lastError: string | undefined;
  /** Undoes the listeners the store put on the client. */
  private readonly listening: (() => void)[] = [];
  /**
   * Who asked to hear of the connection's 'ready' (onReady): one listener of the store's on
   * the client tells them all, so that limiters made per simulation (withClock) add none.
   */
  private readonly readyListeners = new Set<() => void>();

  /**
   * @param client ioredis or iovalkey `Redis` / `Cluster`, node-redis `createClient()` /
   *   `createCluster()`, Valkey GLIDE `GlideClient` / `GlideClusterClient`
   * @param owned the store closes the client only if it created it
   */
  constructor(
    client: RedisClientLike,
    private readonly owned: boolean,
  ) {
    const port = clientPortOf(client);
    this.port = port;
    this.send = port.script;
    // A lazyConnect client would otherwise never connect: fast failure sends it no command.
    port.connectIfLazy();
    this.isCluster = port.isCluster;
    this.leases = new LeaseScripts(this.send);
    this.listening.push(port.onReady(this.connectionReady));
    // A client the app owns keeps its own error handling: no listener of ours on it.
    if (owned) {
      this.listening.push(port.onError((error: Error) => (this.lastError = error.message)));
    }
  }

  /** The connection takes commands again: scripts first, then whoever asked (onReady). */
  private readonly connectionReady = (): void => {
    this.lastError = undefined;
    this.forgetLoadedScripts();
    for (const listener of this.readyListeners) listener();
  };

  /**
   * A new connection may reach a server without the scripts (a restart, a failover): its first
   * call sends EVAL, as ioredis does per socket, rather than paying a NOSCRIPT round trip.
   */
  private forgetLoadedScripts(): void {
    for (const scripts of Object.values(this.scripts)) {
      for (const script of scripts.values()) {
        script.loaded = false;
        if (script.opening?.written) script.opening.written.loaded = false;
      }
    }
    this.leases.forgetLoaded();
  }

  /** Not async: on the hot path every promise layer counts. May throw while disconnected. */
  decide(request: DecideRequest): Promise<StoreDecision> {
    this.assertConnected();
    if (request.lease) {
      if (this.isCluster && spansSeveralHashTags(request.keys)) {
        return this.leaseAcrossSlots(request, request.lease);
      }
      return this.leases.decide(request, request.lease);
    }
    // A standalone Redis runs any keys in one script; so does Cluster when they share a tag.
    if (!this.isCluster || !spansSeveralHashTags(request.keys)) {
      return this.runScript(request, request.mode);
    }
    return this.decideAcrossSlots(request);
  }

  async reset(keys: readonly string[]): Promise<void> {
    this.assertConnected();
    // One DEL per key (with its block key, in the same slot): keys of different clients may
    // live in different Cluster slots.
    await Promise.all(keys.map((key) => this.port.del([key, key + BLOCK_KEY_SUFFIX])));
  }

  giveBack(request: GiveBackRequest): Promise<number> {
    this.assertConnected();
    return this.leases.giveBack(request);
  }

  /** One script per hash tag: all of a request's keys on a standalone Redis. */
  async refund(request: RefundRequest): Promise<void> {
    this.assertConnected();
    if (!this.isCluster || !spansSeveralHashTags(request.keys)) {
      return this.leases.refund(request);
    }
    await Promise.all(
      indicesByHashTag(request.keys).map((indices) =>
        this.leases.refund({
          ...request,
          keys: indices.map((i) => request.keys[i]),
          policies: indices.map((i) => request.policies[i]),
          units: indices.map((i) => request.units[i]),
          chargedAt: indices.map((i) => request.chargedAt[i]),
        }),
      ),
    );
  }

  async close(): Promise<void> {
    for (const off of this.listening.splice(0)) off();
    if (this.owned) await this.port.close();
  }

  /**
   * On a Cluster, the master the client sends these keys to (host:port, from its slot map),
   * so that a stalled master opens only its own breaker; undefined for keys under several
   * hash tags, and on a single Redis, which has one breaker. Follows the slot map: after a
   * failover or a reshard the keys name the node that serves them now.
   */
  nodeOf(keys: readonly string[]): string | undefined {
    if (!this.isCluster || spansSeveralHashTags(keys)) return undefined;
    return this.port.masterOf(hashSlot(hashTag(keys[0])));
  }

  /** On a Cluster, Redis TIME in whole ms of the master `node` (as nodeOf names it). */
  nodeTime(node: string): Promise<number> {
    this.assertConnected();
    return this.port.masterTime(node);
  }

  /** The client's state while it takes no commands ('connecting', 'reconnecting', 'closed'...). */
  whyNotReady(): string | undefined {
    return this.port.isReady() ? undefined : `Redis connection is ${this.port.state()}`;
  }

  /** The client's own 'ready': the connection (a Cluster: the cluster) takes commands again. */
  onReady(listener: () => void): () => void {
    this.readyListeners.add(listener);
    return () => this.readyListeners.delete(listener);
  }

  /**
   * Redis TIME in whole ms. On a Cluster, whose masters each keep their own clock, the
   * latest of them: a wantedUntil built on it is never earlier than the truth on any node,
   * and later on a node by at most how far its clock lags the latest (docs/cluster.md).
   */
  async time(): Promise<number> {
    this.assertConnected();
    const times = await this.port.masterTimes();
    if (times.length === 0) throw new Error('no Redis Cluster master known yet');
    return Math.max(...times);
  }

  /** One atomic EVALSHA deciding every policy of `request` (all its keys in one slot). */
  private runScript(request: DecideRequest, mode: ScriptMode): Promise<StoreDecision> {
    const variant = variantFor(request, mode);
    let script = this.scriptFor(request, variant);
    // The function itself, not a closure over it: one allocation fewer per decision.
    let toDecision = parseReply;
    const { opening } = script;
    if (opening !== undefined) {
      if (opening.writesFirst) script = opening.written ??= this.writtenFirst(script, request);
      const limit = request.policies[0].limit;
      const cost = request.costs[0];
      toDecision = (reply: unknown) => {
        const decision = parseReply(reply);
        opening.saw(decision, limit, cost);
        return decision;
      };
    }
    if (!script.loaded) {
      script.loaded = true;
      return this.evaluate(script, request, mode, variant).then(toDecision);
    }
    const { args } = this;
    args[0] = script.sha;
    args[1] = script.keyCount;
    // Shortened, not emptied: emptied, V8 would free the room the next call needs.
    args.length = 2;
    scriptArguments(request, mode, variant, script.inlined, args);
    return this.send('evalsha', args).then(toDecision, (error) => {
      // A restart, failover or SCRIPT FLUSH empties the script cache; EVAL refills it.
      if (!isNoScript(error)) throw error;
      return this.evaluate(script, request, mode, variant).then(toDecision);
    });
  }

  /** EVAL: the script's text, which also puts it in the server's script cache. */
  private evaluate(
    script: DecideScript,
    request: DecideRequest,
    mode: ScriptMode,
    variant: ScriptVariant,
  ): Promise<unknown> {
    const args: (string | number)[] = [script.lua, script.keyCount];
    return this.send('eval', scriptArguments(request, mode, variant, script.inlined, args));
  }

  /** The script for this request's policies in this variant, composed the first time. */
  private scriptFor(request: DecideRequest, variant: ScriptVariant): DecideScript {
    const { policies } = request;
    const staticCosts = costsAreStatic(request);
    const { last } = this;
    let same = last.script !== undefined && last.variant === variant;
    same &&= last.staticCosts === staticCosts && last.policies.length === policies.length;
    for (let i = 0; same && i < policies.length; i++) same = last.policies[i] === policies[i];
    if (same) return last.script!;
    last.script = this.scriptById(request, variant, staticCosts);
    // A copy: the caller's array may change after the call.
    last.policies = [...policies];
    last.variant = variant;
    last.staticCosts = staticCosts;
    return last.script;
  }

  private scriptById(
    request: DecideRequest,
    variant: ScriptVariant,
    staticCosts: boolean,
  ): DecideScript {
    const { policies, costs } = request;
    const scripts = this.scripts[variant];
    let inlined: InlinedValues = staticCosts ? 'all' : 'values';
    let id = scriptIdOf(policies, inlined, costs);
    let script = scripts.get(id);
    if (script) return script;
    if (this.scriptsWithLiterals >= INLINED_SCRIPTS_KEPT) {
      inlined = 'none';
      id = scriptIdOf(policies);
      script = scripts.get(id);
      if (script) return script;
    } else {
      this.scriptsWithLiterals++;
    }
    const opening =
      variant === 'consume' && isLoneFixedWindow(policies)
        ? new WindowOpening<DecideScript>()
        : undefined;
    const lua = composeDecideScript(policies, variant, inlined, costs);
    const made: DecideScript = { ...scriptOf(lua, inlined, policies), opening };
    scripts.set(id, made);
    return made;
  }

  /**
   * The written-first form of a lone fixed window's script (lua/fixed-window-first.lua), on
   * the same values: its route's companion, counted with it against INLINED_SCRIPTS_KEPT.
   */
  private writtenFirst(script: DecideScript, request: DecideRequest): DecideScript {
    const { policies, costs } = request;
    const lua = composeDecideScript(policies, 'consume', script.inlined, costs, true);
    return { ...scriptOf(lua, script.inlined, policies), opening: undefined };
  }

  /**
   * Cluster, keys under several tags: one script per tag, in two phases. First every tag's
   * policies are checked without charging ('check': a policy that denies there starts its
   * block, in the call that found the denial); if any denies, the request is denied and
   * nothing is charged, as in the single script. Otherwise every tag's policies are
   * consumed, each tag atomically. No policy can ever admit past its limit, since each
   * charge is atomic in its slot; but a request that another request overtakes between
   * the phases can be denied by one tag after the others have charged it.
   */
  private async decideAcrossSlots(request: DecideRequest): Promise<StoreDecision> {
    const groups = indicesByHashTag(request.keys);
    const inEachSlot = (mode: ScriptMode) =>
      Promise.all(groups.map((indices) => this.runScript(subRequest(request, indices), mode)));
    const checks = await inEachSlot(request.mode === 'peek' ? 'peek' : 'check');
    if (request.mode === 'peek' || !checks.every((check) => check.allowed)) {
      return mergeDecisions(groups, checks);
    }
    // A tag reached after `wantedUntil` charges nothing, though earlier tags did: the same
    // split as a request overtaken between the phases.
    return mergeDecisions(groups, await inEachSlot('consume'));
  }

  /**
   * decideAcrossSlots for a leased request (a leased policy beside one keyed by another
   * client). Every tag is checked first, all in parallel, charging nothing: a denial ends
   * there. Then the tags whose policies are all leased take their leases, and only if every
   * one does are the other tags charged: a tag overtaken between the phases denies the
   * request after its leased tags charged, and what they leased stays with the pod
   * (`leased`, set on the denial too), so only a tag of policies not leased can be charged
   * for a denied request, as in exact mode, and only when several such tags race.
   */
  private async leaseAcrossSlots(
    request: DecideRequest,
    terms: LeaseTerms,
  ): Promise<StoreDecision> {
    const groups = indicesByHashTag(request.keys);
    const inSlot = (indices: readonly number[], mode: DecisionMode) => {
      const lease = subTerms(terms, indices);
      return this.leases.decide({ ...subRequest(request, indices), mode, lease }, lease);
    };
    const checks = await Promise.all(groups.map((indices) => inSlot(indices, 'peek')));
    if (request.mode === 'peek' || !checks.every((check) => check.allowed)) {
      return mergeDecisions(groups, checks);
    }
    const leasedOnly = groups.map((indices) => indices.every((i) => terms.sizes[i] > 0));
    const decisions = [...checks];
    const charge = (leased: boolean) =>
      Promise.all(
        groups.map(async (indices, g) => {
          if (leasedOnly[g] === leased) decisions[g] = await inSlot(indices, 'consume');
        }),
      );
    await charge(true);
    if (decisions.every((decision) => decision.allowed)) await charge(false);
    const merged = mergeDecisions(groups, decisions);
    if (merged.stale) return merged;
    return { ...merged, leased: mergeGrants(groups, decisions) };
  }

  /**
   * While disconnected, a client with an offline queue (ioredis' and node-redis' default)
   * would hold each command for its retries: fail at once instead, and let the next request
   * try again.
   */
  private assertConnected(): void {
    if (!this.port.isReady()) {
      const cause = this.lastError === undefined ? '' : ` (${this.lastError})`;
      throw new Error(`Redis connection is ${this.port.state()}${cause}`);
    }
  }
}

function scriptOf(
  lua: string,
  inlined: InlinedValues,
  policies: readonly ResolvedPolicy[],
): Omit<DecideScript, 'opening'> {
  const sha = createHash('sha1').update(lua).digest('hex');
  return { lua, sha, inlined, keyCount: String(keyCount(policies)), loaded: false };
}

/** A decision script's reply (ScriptReply), as the client hands it over. */
function parseReply(answer: unknown): StoreDecision {
  const reply = answer as ScriptReply;
  if (typeof reply === 'number') return admittedAtOnce(reply);
  if (reply.length === 0) return STALE_DECISION;
  // 1 + 4n values for n policies; a lone policy's 4 leave out `admitted`, its `allowed`.
  const first = reply.length % VERDICT_VALUES;
  // Sized up front: a push into an empty array reserves room for 16.
  const verdicts = new Array<PolicyVerdict>((reply.length - first) / VERDICT_VALUES);
  for (let i = 0; i < verdicts.length; i++) {
    verdicts[i] = verdictAt(reply, first + VERDICT_VALUES * i);
  }
  return { allowed: reply[0] === 1, verdicts };
}

function admittedAtOnce(reply: number): StoreDecision {
  const remaining = Math.floor(reply / RESET_SPAN);
  const verdict = {
    allowed: true,
    remaining,
    resetMs: reply - remaining * RESET_SPAN,
    retryAfterMs: 0,
    delayMs: 0,
  };
  return { allowed: true, verdicts: [verdict] };
}

/** A policy's allowed, remaining, reset and wait: its delay if allowed, else its retry. */
function verdictAt(reply: (number | string)[], at: number): PolicyVerdict {
  const allowed = reply[at] === 1;
  const wait = Number(reply[at + 3]);
  return {
    allowed,
    remaining: Number(reply[at + 1]),
    resetMs: Number(reply[at + 2]),
    retryAfterMs: allowed ? 0 : wait,
    delayMs: allowed ? wait : 0,
  };
}

/** What Redis Cluster hashes: the text between the first '{' and the next '}', if any. */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return key.slice(open + 1, close);
  }
  return key;
}

function spansSeveralHashTags(keys: readonly string[]): boolean {
  if (keys.length < 2) return false;
  const first = hashTag(keys[0]);
  for (let i = 1; i < keys.length; i++) if (hashTag(keys[i]) !== first) return true;
  return false;
}

/** The positions of the keys, grouped by hash tag in order of first appearance. */
function indicesByHashTag(keys: readonly string[]): number[][] {
  const groups = new Map<string, number[]>();
  keys.forEach((key, i) => {
    const tag = hashTag(key);
    const group = groups.get(tag);
    if (group) group.push(i);
    else groups.set(tag, [i]);
  });
  return [...groups.values()];
}

function subRequest(request: DecideRequest, indices: readonly number[]): DecideRequest {
  return {
    ...request,
    keys: indices.map((i) => request.keys[i]),
    policies: indices.map((i) => request.policies[i]),
    costs: indices.map((i) => request.costs[i]),
  };
}

/** Lease terms for some of the policies, by position. */
function subTerms(terms: LeaseTerms, indices: readonly number[]): LeaseTerms {
  return {
    sizes: indices.map((i) => terms.sizes[i]),
    held: indices.map((i) => terms.held[i]),
    heldWindows: indices.map((i) => terms.heldWindows[i]),
  };
}

/** Per-group leases back in policy order: 0 units where a group charged nothing. */
function mergeGrants(
  groups: readonly (readonly number[])[],
  decisions: readonly StoreDecision[],
): LeaseGrant {
  const count = groups.reduce((sum, indices) => sum + indices.length, 0);
  const units = Array<number>(count).fill(0);
  const windows = Array<number>(count).fill(0);
  const endsInMs = Array<number>(count).fill(0);
  groups.forEach((indices, g) => {
    const { leased } = decisions[g];
    if (leased === undefined) return;
    indices.forEach((policyIndex, j) => {
      units[policyIndex] = leased.units[j];
      windows[policyIndex] = leased.windows[j];
      endsInMs[policyIndex] = leased.endsInMs[j];
    });
  });
  return { units, windows, endsInMs };
}

/** Puts per-group verdicts back in policy order; a denied request waits for nothing. */
function mergeDecisions(
  groups: readonly (readonly number[])[],
  decisions: readonly StoreDecision[],
): StoreDecision {
  if (decisions.some((decision) => decision.stale)) return STALE_DECISION;
  const allowed = decisions.every((decision) => decision.allowed);
  const verdicts: PolicyVerdict[] = [];
  groups.forEach((indices, g) =>
    indices.forEach((policyIndex, j) => {
      const verdict = decisions[g].verdicts[j];
      verdicts[policyIndex] = allowed ? verdict : { ...verdict, delayMs: 0 };
    }),
  );
  return { allowed, verdicts };
}
