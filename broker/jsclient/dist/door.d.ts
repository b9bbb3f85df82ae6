import { type Budget, type Call, type JSONObject, type Rule } from "./wire.js";
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
    /** The descriptor the call is for, from the door's catalog. */
    descriptor: Descriptor;
}
/** A handler answers one call; it may throw or reject (exec-threw). */
export type Handler = (call: Call, ctx: CallContext) => HandlerResult | Promise<HandlerResult>;
/** observe builds an observation. */
export declare function observe(observed: JSONObject, budget?: Budget): HandlerResult;
/** refuse builds a refusal; why defaults to the rule's static text. */
export declare function refuse(rule: Rule, why?: string, budget?: Budget): HandlerResult;
/** The part of a WebSocket the door uses: the browser's, a worker's, or
 * one made by the `ws` package in Node. */
export interface WebSocketLike {
    readonly readyState: number;
    send(data: string): void;
    close(code?: number, reason?: string): void;
    onopen: ((ev: any) => void) | null;
    onmessage: ((ev: any) => void) | null;
    onclose: ((ev: any) => void) | null;
    onerror: ((ev: any) => void) | null;
}
/** Opens a socket to url. A page offers its view key (PROTOCOL section
 * 3): `(url) => new WebSocket(url, viewProtocols(viewKey))`. In Node, pass
 * one that also sets Origin and Cookie, for example `(url) => new
 * WebSocket(url, viewProtocols(viewKey), { origin, headers: { Cookie } })`
 * with `ws`. */
export type WebSocketFactory = (url: string) => WebSocketLike;
/** Something the door reports (onEvent); never a secret, never a frame's
 * content. */
export type DoorEvent = {
    type: "connected";
} | {
    type: "catalog";
    descriptors: number;
} | {
    type: "disconnected";
    code: number;
    reason: string;
} | {
    type: "reconnecting";
    attempt: number;
    inMs: number;
} | {
    type: "dropped";
    why: "binary" | "too-large" | "unreadable" | "duplicate";
} | {
    type: "answered";
    callId: string;
    outcome: "ok" | Rule;
} | {
    type: "stopped";
    code: number;
    reason: string;
};
/** Options of createExecutorDoor. */
export interface DoorOptions {
    /** The broker's channel: ws://127.0.0.1:PORT/local/channel for a page
     * (the view cookie's path covers /local). */
    url: string | URL;
    /** The descriptors to serve; setCatalog replaces them. */
    catalog: readonly Descriptor[];
    /** Answers calls. */
    handler: Handler;
    /** Opens sockets; defaults to the global WebSocket (browsers, workers). */
    WebSocket?: WebSocketFactory;
    /** Calls running at once; past it calls are refused overloaded.
     * Default 64. */
    maxInflight?: number;
    /** The first wait before reconnecting (ms, default 100); it doubles up
     * to backoffMaxMs (default 10000), jittered. */
    backoffBaseMs?: number;
    backoffMaxMs?: number;
    /** Reports what happens; exceptions it throws are ignored. */
    onEvent?: (e: DoorEvent) => void;
}
/** How a door ended. */
export interface DoorEnd {
    code: number;
    reason: string;
}
/** A running door. */
export interface Door {
    /** Whether a socket is open now. */
    readonly connected: boolean;
    /** Replaces the catalog and sends it when connected. */
    setCatalog(descriptors: readonly Descriptor[]): void;
    /** Stops: later calls are refused shutting-down, running ones get up
     * to graceMs (default 5000) to finish, then the socket closes 1000. */
    close(graceMs?: number): Promise<void>;
    /** Settles when the door has stopped for good: after close, or after a
     * close that reconnecting cannot fix. */
    readonly done: Promise<DoorEnd>;
}
/** createExecutorDoor connects to the broker and serves calls until
 * close. See the module comment. */
export declare function createExecutorDoor(opts: DoorOptions): Door;
/** utf8Length is the number of bytes s takes in UTF-8. */
export declare function utf8Length(s: string): number;
