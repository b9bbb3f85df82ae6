import { type Answer, type Call, type Rule, type WireInput } from "./wire.js";
import { type Descriptor, type Handler } from "./executor.js";
export { observe, refuse } from "./executor.js";
export type { Bounds, CallContext, Descriptor, Handler, HandlerResult, Tool } from "./executor.js";
export type { Answer, Call } from "./wire.js";
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
export declare const UNKNOWN_CALL = "unknown-call";
/** A valid answer whose budget contradicts the bounds its call echoed
 * (requestsLimit other than maxRequests, or requestsUsed over it). */
export declare const BUDGET_MISMATCH = "budget-mismatch";
/** Why deliver settled nothing: the answer's rule when it failed
 * validation, else UNKNOWN_CALL or BUDGET_MISMATCH (the reasons the
 * broker counts in airlock_channel_frames_rejected_total). */
export type Undelivered = Rule | typeof UNKNOWN_CALL | typeof BUDGET_MISMATCH;
/** What deliver did with one answer. */
export type Delivery = {
    delivered: true;
} | {
    delivered: false;
    refused: Undelivered;
    why: string;
};
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
/**
 * createChannel is the asking end of an executor channel over a
 * transport of the caller's. As the broker's own: every call settles
 * exactly once; a frame that fails validation, names no waiting call, or
 * carries a budget its call's bounds contradict settles nothing; an
 * observation over the echoed maxOutputBytes settles output-too-large.
 */
export declare function createChannel(opts: ChannelOptions): Channel;
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
export declare function createExecutorDoor(opts: ExecutorDoorOptions): ExecutorDoor;
