// The channel module of @airlock/client: both ends of an executor channel
// without a transport (PROTOCOL sections 5 and 6; the seed's
// createChannel and createExecutorDoor). The asking end, createChannel,
// is what the broker is to a page or an environment (its Go counterpart
// is broker/channel's Remote); the answering end, createExecutorDoor, is
// what a page or an environment is to the broker (link.Door). Whatever
// carries frames between them (a WebSocket, a MessagePort, a worker, a
// test's pipe) is the caller's: the channel asks it only whether the peer
// is connected and to send one text, and is handed the answers back.
//
// No runtime dependency: it runs in Node 20+, browsers and workers. Every
// frame is judged by the wire module's validator, and what the door does
// with one call is executor.ts's, shared with the WebSocket door.

import {
  EXEC_THREW,
  MACHINE_CLOSED,
  MACHINE_TIMEOUT,
  MACHINE_UNREACHABLE,
  NO_PAGE,
  OUTPUT_TOO_LARGE,
  OVERLOADED,
  PAGE_CLOSED,
  PAGE_TIMEOUT,
  UNATTRIBUTED_CALL,
  WHY,
  encodeCall,
  parseAnswer,
  type Answer,
  type Call,
  type JSONObject,
  type RefusedAnswer,
  type Rule,
  type WireInput,
} from "./wire.js";
import { admit, budgetAgrees, contain, encode, normalize, outputBytes, outputFits, outputWhy, readCall, refuse, type Descriptor, type Handler } from "./executor.js";

export { observe, refuse } from "./executor.js";
export type { Bounds, CallContext, Descriptor, Handler, HandlerResult, Tool } from "./executor.js";
export type { Answer, Call } from "./wire.js";

// ---------------------------------------------------------------------------
// The asking end.

/** Who answers: a browser page or a paired environment (a machine). It
 * picks the peer-absence rules of PROTOCOL section 5.2. */
export type Peer = "page" | "machine";

/** The transport and the time of createChannel. */
export interface ChannelOptions {
  peer: Peer;
  /** Whether the peer is connected now. When it is not, ask refuses at
   * once (no-page, machine-unreachable) and sends nothing. */
  connected(): boolean;
  /** Puts one call envelope (text) on the transport. A throw or a
   * rejection means the transport is gone: the call settles
   * page-closed / machine-closed. */
  send(text: string): void | Promise<void>;
  /** How long a call waits for a valid answer before it settles
   * page-timeout / machine-timeout (the broker waits the descriptor's
   * timeoutMs plus a grace, PROTOCOL section 6.6). */
  timeoutMs: number;
  /** Calls awaiting an answer at once; past it ask refuses overloaded.
   * Default 1024, as the broker's. */
  maxInflight?: number;
}

/** A call as ask takes it: ask fills in v and a fresh callId. */
export type CallInit = Omit<Call, "v" | "callId">;

/** Per-call options of ask. */
export interface AskOptions {
  /** This call's wait instead of the channel's timeoutMs. */
  timeoutMs?: number;
  /** Aborting it stops waiting: the call settles as timed out. */
  signal?: AbortSignal;
}

/** A valid answer nobody waits for: usually one that lost the race with
 * its timeout, or one for another channel. */
export const UNKNOWN_CALL = "unknown-call";
/** A valid answer whose budget contradicts the bounds its call echoed
 * (requestsLimit other than maxRequests, or requestsUsed over it). */
export const BUDGET_MISMATCH = "budget-mismatch";

/** Why deliver settled nothing: the answer's rule when it failed
 * validation, else UNKNOWN_CALL or BUDGET_MISMATCH (the reasons the
 * broker counts in airlock_channel_frames_rejected_total). */
export type Undelivered = Rule | typeof UNKNOWN_CALL | typeof BUDGET_MISMATCH;

/** What deliver did with one answer. */
export type Delivery = { delivered: true } | { delivered: false; refused: Undelivered; why: string };

/** The asking end of a channel. */
export interface Channel {
  /** Sends call and settles with its answer: the peer's (runtime
   * refusals and budget as the peer sent them), or a refusal named by
   * the channel. It never rejects, except with the wire module's
   * WireError for a call the broker would refuse (nothing is sent). */
  ask(call: CallInit, opts?: AskOptions): Promise<Answer>;
  /** Hands the channel one answer frame from the peer. Only a valid
   * answer to a call this channel is waiting for settles it. */
  deliver(answer: WireInput): Delivery;
  /** The number of calls awaiting an answer. */
  waiting(): number;
  /** Settles every call awaiting an answer page-closed / machine-closed:
   * call it when the transport goes. The channel stays usable: later
   * calls go by connected(). */
  abandon(): void;
}

const REASON_WHY: Readonly<Record<typeof UNKNOWN_CALL | typeof BUDGET_MISMATCH, string>> = {
  [UNKNOWN_CALL]: "no call awaits this callId",
  [BUDGET_MISMATCH]: "the budget contradicts the bounds the call echoed",
};

// RULES_OF is each peer's absence vocabulary (PROTOCOL section 5.2).
const RULES_OF: Readonly<Record<Peer, { offline: Rule; timeout: Rule; closed: Rule }>> = {
  page: { offline: NO_PAGE, timeout: PAGE_TIMEOUT, closed: PAGE_CLOSED },
  machine: { offline: MACHINE_UNREACHABLE, timeout: MACHINE_TIMEOUT, closed: MACHINE_CLOSED },
};

/** One call awaiting its answer, with the bounds its answer is held to. */
interface Pending {
  resolve(a: Answer): void;
  echo: JSONObject;
  timer: ReturnType<typeof setTimeout>;
  signal: AbortSignal | undefined;
  onAbort: () => void;
}

/**
 * createChannel is the asking end of an executor channel over a
 * transport of the caller's. As the broker's own: every call settles
 * exactly once; a frame that fails validation, names no waiting call, or
 * carries a budget its call's bounds contradict settles nothing; an
 * observation over the echoed maxOutputBytes settles output-too-large.
 */
export function createChannel(opts: ChannelOptions): Channel {
  if (opts.peer !== "page" && opts.peer !== "machine") throw new TypeError('createChannel: peer must be "page" or "machine"');
  const rules = RULES_OF[opts.peer];
  if (typeof opts.connected !== "function" || typeof opts.send !== "function") throw new TypeError("createChannel: connected and send must be functions");
  checkTime(opts.timeoutMs);
  const max = opts.maxInflight ?? 1024;
  const pending = new Map<string, Pending>();
  let next = 0;

  const refusal = (callId: string, rule: Rule, budget?: RefusedAnswer["budget"]): RefusedAnswer =>
    budget === undefined ? { v: 1, callId, ok: false, refused: rule, why: WHY[rule] } : { v: 1, callId, ok: false, refused: rule, why: WHY[rule], budget };

  // settle delivers a to the call waiting under callId, if it still is.
  const settle = (callId: string, a: Answer): void => {
    const p = pending.get(callId);
    if (p === undefined) return;
    pending.delete(callId);
    clearTimeout(p.timer);
    p.signal?.removeEventListener("abort", p.onAbort);
    p.resolve(a);
  };

  const isConnected = (): boolean => {
    try {
      return opts.connected() === true;
    } catch {
      return false;
    }
  };

  return {
    ask(call: CallInit, o: AskOptions = {}): Promise<Answer> {
      const callId = `c_${++next}`;
      let text: string;
      try {
        text = encodeCall({ callId, tool: call.tool, descriptorId: call.descriptorId, args: call.args, boundsEcho: call.boundsEcho });
        if (o.timeoutMs !== undefined) checkTime(o.timeoutMs);
      } catch (e) {
        return Promise.reject(e);
      }
      if (!isConnected()) return Promise.resolve(refusal(callId, rules.offline));
      if (pending.size >= max) return Promise.resolve(refusal(callId, OVERLOADED));
      if (o.signal?.aborted) return Promise.resolve(refusal(callId, rules.timeout));
      return new Promise<Answer>((resolve) => {
        // Registered before send, so that a transport answering from
        // inside send still finds the call.
        const expire = () => settle(callId, refusal(callId, rules.timeout));
        const timer = setTimeout(expire, o.timeoutMs ?? opts.timeoutMs);
        pending.set(callId, { resolve, echo: call.boundsEcho, timer, signal: o.signal, onAbort: expire });
        o.signal?.addEventListener("abort", expire, { once: true });
        const closed = () => settle(callId, refusal(callId, rules.closed));
        try {
          Promise.resolve(opts.send(text)).catch(closed);
        } catch {
          closed();
        }
      });
    },

    deliver(input: WireInput): Delivery {
      const verdict = parseAnswer(input);
      if (!verdict.ok) return { delivered: false, refused: verdict.rule, why: WHY[verdict.rule] };
      const a = verdict.value;
      const p = pending.get(a.callId);
      if (p === undefined) return { delivered: false, refused: UNKNOWN_CALL, why: REASON_WHY[UNKNOWN_CALL] };
      const bounds = echoed(p.echo);
      if (a.budget !== undefined && !budgetAgrees(a.budget, bounds)) {
        return { delivered: false, refused: BUDGET_MISMATCH, why: REASON_WHY[BUDGET_MISMATCH] };
      }
      const limit = bounds.maxOutputBytes;
      if (a.ok && limit !== undefined && !outputFits(a.observed, { maxOutputBytes: limit })) {
        settle(a.callId, { ...refusal(a.callId, OUTPUT_TOO_LARGE, a.budget), why: outputWhy(outputBytes(a.observed), limit) });
      } else {
        settle(a.callId, a);
      }
      return { delivered: true };
    },

    waiting(): number {
      return pending.size;
    },

    abandon(): void {
      for (const callId of [...pending.keys()]) settle(callId, refusal(callId, rules.closed));
    },
  };
}

// echoed reads the bounds a call echoed that its answer is held to: a
// bound the echo leaves out is the broker's zero value (maxRequests 0),
// or not held (maxOutputBytes).
function echoed(echo: JSONObject): { maxRequests: number; maxOutputBytes?: number } {
  const n = (x: unknown) => (typeof x === "number" && Number.isFinite(x) ? x : undefined);
  const maxOutputBytes = n(echo.maxOutputBytes);
  return maxOutputBytes === undefined ? { maxRequests: n(echo.maxRequests) ?? 0 } : { maxRequests: n(echo.maxRequests) ?? 0, maxOutputBytes };
}

function checkTime(ms: unknown): void {
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms <= 0) throw new TypeError("createChannel: timeoutMs must be a positive number of milliseconds");
}

// ---------------------------------------------------------------------------
// The answering end.

/** What createExecutorDoor is given: where the descriptors it admitted
 * are, and what runs a call. */
export interface ExecutorDoorOptions {
  /** The descriptor admitted here under descriptorId (a /v1/tools entry,
   * or a catalog's), or undefined or null when none is. */
  lookup(descriptorId: string): Descriptor | undefined | null | Promise<Descriptor | undefined | null>;
  /** Runs one admitted call; it may throw or reject (exec-threw). It is
   * cut off at the descriptor's timeoutMs (exec-timeout). */
  exec: Handler;
}

/** The answering end of a channel. */
export interface ExecutorDoor {
  /** Answers one call: its text (or UTF-8 bytes), or a value already
   * parsed. Settles with the answer envelope's text to send back, or null
   * when there is nobody to answer (not JSON, or no callId can be read,
   * or over the bound of a call). It never rejects. Aborting signal (the
   * transport went) cuts the call off: exec's signal is aborted. */
  receive(call: WireInput | object, signal?: AbortSignal): Promise<string | null>;
}

/**
 * createExecutorDoor is the answering end of an executor channel. Each
 * call is validated by the wire module (its rule, under its callId, when
 * it fails), re-checked against lookup(descriptorId) (unattributed-call,
 * bounds-mismatch, unknown-tool), then run through exec under
 * containment: a throw, a rejection, or a result that is not a valid
 * answer is exec-threw, an observation over maxOutputBytes
 * output-too-large, and a refusal exec returns (host-not-allowed,
 * budget-exhausted, …) passes with its why and budget.
 */
export function createExecutorDoor(opts: ExecutorDoorOptions): ExecutorDoor {
  if (typeof opts.lookup !== "function" || typeof opts.exec !== "function") throw new TypeError("createExecutorDoor: lookup and exec must be functions");
  return {
    async receive(input: WireInput | object, signal?: AbortSignal): Promise<string | null> {
      const inbound = readCall(input);
      if ("dropped" in inbound) return null;
      if ("refused" in inbound) return encode(inbound.callId, refuse(inbound.refused)).text;
      const call = inbound.call;
      let d: Descriptor | undefined;
      try {
        const found = await opts.lookup(call.descriptorId);
        d = found == null ? undefined : normalize([found])[0];
      } catch {
        return encode(call.callId, refuse(EXEC_THREW)).text; // the executor's own lookup failed
      }
      const early = admit(call, d);
      if (early !== undefined || d === undefined) return encode(call.callId, early ?? refuse(UNATTRIBUTED_CALL)).text;
      return encode(call.callId, await contain(opts.exec, call, d, signal), d.bounds).text;
    },
  };
}
