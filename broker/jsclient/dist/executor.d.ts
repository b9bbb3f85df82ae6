import { type Budget, type Call, type JSONObject, type Rule, type WireInput } from "./wire.js";
import type { Bounds, Descriptor, Tool } from "./generated/channel.js";
export type { Bounds, Descriptor, Tool };
/** What a handler returns: an observation or a refusal (use observe and
 * refuse). The door fills in v and the call's callId. */
export type HandlerResult = {
    ok: true;
    observed: JSONObject;
    budget?: Budget;
} | {
    ok: false;
    refused: Rule;
    why?: string;
    budget?: Budget;
};
/** What a handler is told besides the call. */
export interface CallContext {
    /** Aborted when the call's time (bounds.timeoutMs) is up, when the
     * connection that carried it is gone, or when the door closes. */
    signal: AbortSignal;
    /** The descriptor the call is for, as the broker encodes it. */
    descriptor: Descriptor;
}
/** A handler answers one call; it may throw or reject (exec-threw). */
export type Handler = (call: Call, ctx: CallContext) => HandlerResult | Promise<HandlerResult>;
/** observe builds an observation. */
export declare function observe(observed: JSONObject, budget?: Budget): HandlerResult;
/** refuse builds a refusal; why defaults to the rule's static text. */
export declare function refuse(rule: Rule, why?: string, budget?: Budget): HandlerResult;
/** What readCall made of one inbound frame: a valid call, a refusal to
 * answer under the callId it carries, or nothing to answer (no callId
 * could be read, or the frame is over the bound of a call). */
export type Inbound = {
    call: Call;
} | {
    callId: string;
    refused: Rule;
} | {
    dropped: "too-large" | "unreadable";
};
/** readCall reads one inbound call: text or its UTF-8 bytes, or a value
 * already parsed, which is judged as its JSON text (the one validator,
 * wire's parseCall, decides either way). As link.Door.Handle: a call that
 * fails is refused under its callId when one can be read, else dropped. */
export declare function readCall(input: WireInput | object): Inbound;
/** admit is the refusal an executor makes before running call for d (the
 * descriptor its lookup gave for call.descriptorId), or undefined: the
 * descriptor must be admitted here (unattributed-call), echoed exactly
 * (bounds-mismatch, compared as canonical JSON of the bounds as the
 * broker encodes them) and declare the tool (unknown-tool, whose why
 * names the tool and the descriptor). */
export declare function admit(call: Call, d: Descriptor | undefined): HandlerResult | undefined;
/** outputWhy is output-too-large's why: the observation was size bytes
 * compacted (0: not known), over maxOutputBytes. */
export declare function outputWhy(size: number, maxOutputBytes: number): string;
/** timeoutWhy is exec-timeout's why. */
export declare function timeoutWhy(timeoutMs: number): string;
/** unknownToolWhy is unknown-tool's why: the tool asked for (a valid
 * call's id, so clean already), cut to maxNameInWhy bytes on a code
 * point, and the descriptor that does not declare it. */
export declare function unknownToolWhy(tool: string, descriptorId: string): string;
/** contain runs handler for an admitted call and settles with its result,
 * or exec-threw when it throws, rejects or is cut off (signal aborted:
 * its connection or its door is gone), or exec-timeout at
 * d.bounds.timeoutMs, whatever the handler does. The handler's own signal
 * is aborted once the call is settled. */
export declare function contain(handler: Handler, call: Call, d: Descriptor, signal?: AbortSignal): Promise<HandlerResult>;
/** An encoded answer and what it says. */
export interface Encoded {
    text: string;
    outcome: "ok" | Rule;
}
/** encode encodes r as the answer to callId. An answer that would not
 * pass the broker's validator, or whose budget contradicts bounds, is
 * exec-threw; an observation over bounds.maxOutputBytes is
 * output-too-large (keeping its budget): the refusal the broker would
 * settle the call with, so the caller learns at once. */
export declare function encode(callId: string, r: HandlerResult, bounds?: Bounds): Encoded;
/** budgetAgrees is executors/wire Bounds.BudgetAgrees: a budget whose
 * requestsLimit is not maxRequests, or whose requestsUsed is over it, is
 * a lie about the call's fetches; the broker treats it as an invalid
 * frame. */
export declare function budgetAgrees(b: Budget, bounds: Partial<Pick<Bounds, "maxRequests">>): boolean;
/** outputFits is executors/wire Bounds.OutputFits: observed, compacted,
 * is at most maxOutputBytes. */
export declare function outputFits(observed: JSONObject, bounds: Pick<Bounds, "maxOutputBytes">): boolean;
/** outputBytes is the size of observed compacted, in UTF-8 bytes. */
export declare function outputBytes(observed: JSONObject): number;
/** normalize copies descriptors as the broker encodes them (Go's zero
 * values: an absent description is "", absent maxRequests 0, absent lists
 * empty lists; an outputSchema only when a tool declares one), which is
 * what boundsEcho echoes. */
export declare function normalize(ds: readonly Descriptor[]): Descriptor[];
/** utf8Length is the number of bytes s takes in UTF-8. */
export declare function utf8Length(s: string): number;
