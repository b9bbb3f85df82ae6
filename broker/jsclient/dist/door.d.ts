import { type Rule } from "./wire.js";
import { type Descriptor, type Handler } from "./executor.js";
export { observe, refuse, utf8Length } from "./executor.js";
export type { Bounds, CallContext, Descriptor, Handler, HandlerResult, Tool } from "./executor.js";
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
