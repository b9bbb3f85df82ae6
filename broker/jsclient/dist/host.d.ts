import { type ChildProcess } from "node:child_process";
import WebSocket from "ws";
import { Emitter } from "./emitter.js";
import { ViewClient, type ViewOptions } from "./view.js";
import { AirlockError, type AnyEnvelope, type CancelPayload, type Envelope, type Family, type FamilyTypes, type HostConnectedPayload, type HostReceiveType, type HostSendType, type JsonObject, type MessageMap, type MintResponse, type OrderedType, type SnapshotRequestPayload, type Target } from "./messages.js";
export * from "./messages.js";
/** Options of {@link launch}. */
export interface LaunchOptions {
    /** Path of the airlock binary; default "airlock" (looked up on PATH). */
    bin?: string;
    /** Extra `airlock serve` arguments (`--data DIR`, `--no-builtin`, ...). Never the token. */
    args?: readonly string[];
    /** The listen address; default "127.0.0.1:0" (the broker picks a port). */
    listen?: string;
    /**
     * An absolute path for the broker's Unix socket (`--listen-unix`), in a
     * folder only this user can enter (mode 0700, as `$XDG_RUNTIME_DIR`
     * is). When set, this host mints and opens its host socket over it; the
     * broker keeps its TCP address for views (PROTOCOL section 1.3).
     */
    socket?: string;
    /**
     * Extra environment for the broker (a key set to undefined is removed).
     * The launch token is always set by launch itself. An `AIRLOCK_*`
     * variable the broker does not know (`AIRLOCK_BIN`) is logged as a
     * warning and ignored.
     */
    env?: Readonly<Record<string, string | undefined>>;
    /** Receives each stderr line of the broker (its JSON logs). Default: dropped. */
    onLog?: (line: string) => void;
    /** How long to wait for the listening line; default 30000 ms. */
    startTimeoutMs?: number;
}
/** The listening line `airlock serve` prints first on stdout (PROTOCOL section 9). */
interface ListeningLine {
    event: "listening";
    addr: string;
    pid: number;
    /** The Unix socket's path, with `--listen-unix`. */
    socket?: string;
}
/**
 * Launches `airlock serve` on loopback port 0 with a fresh launch token
 * (256 random bits) in its environment, never in argv, and resolves once
 * it has printed its listening line.
 *
 * # Notes
 * - stdout and stderr are always drained, so a chatty broker never blocks
 *   on a full pipe; stderr lines go to `onLog`.
 * - The broker is sent SIGTERM if this Node process exits first.
 * - A broker that exits or prints anything but the listening line first,
 *   or stays silent past `startTimeoutMs`, is killed and the promise
 *   rejects.
 */
export declare function launch(opts?: LaunchOptions): Promise<LaunchedBroker>;
/** Options of {@link Broker.mint} (PROTOCOL section 2). */
export interface MintOptions {
    /** The view's origin; default the broker's own, which its built-in /local/view page has. */
    launchOrigin?: string;
    /** Session lifetime; the broker defaults to 28800 and clamps to [1, 86400]. */
    ttlSeconds?: number;
    /** Allow sourceEdit* in this session. Default false. */
    canProposeSourceEdits?: boolean;
    /** Bound on the HTTP request; default 30000 ms. */
    timeoutMs?: number;
}
/** A minted session: the mint response plus how a view reaches it. It holds secrets: do not log it. */
export interface Session extends MintResponse {
    /** The broker's base URL, http://127.0.0.1:PORT. */
    baseUrl: string;
    /** `<workspaceSessionId>.<viewCredential>`: what a view page reads from its URL fragment. */
    viewFragment: string;
    /** The built-in view page's URL for this session, as `airlock mint` prints it. */
    viewUrl: string;
    /** The broker's Unix socket, when the host reaches it that way ({@link BrokerOptions.socket}). */
    socket?: string;
}
/** Options of the {@link Broker} constructor. */
export interface BrokerOptions {
    /**
     * The broker's Unix socket (`serve --listen-unix PATH`). When set, mint
     * and the host socket go over it instead of TCP, with `Host: localhost`
     * as the broker asks there; views still use `baseUrl`.
     */
    socket?: string;
}
/**
 * A running broker, known by its base URL and launch token. {@link launch}
 * returns one it owns; construct one directly for a broker started
 * elsewhere. The token is kept in a private field (not enumerable, not
 * shown by `util.inspect`).
 */
export declare class Broker {
    #private;
    /** http://127.0.0.1:PORT */
    readonly baseUrl: string;
    /** The broker's own origin (its built-in view page's). */
    readonly origin: string;
    /** The Unix socket this host reaches the broker over, if any. */
    readonly socket: string | undefined;
    constructor(baseUrl: string, token: string, opts?: BrokerOptions);
    /** Mints a workspace session (POST /local/sessions). Refusals reject with an {@link AirlockError} carrying `status`. */
    mint(opts?: MintOptions): Promise<Session>;
    /** Opens the session's host socket; see {@link connectHost}. */
    connectHost(session: Session, opts?: HostOptions): Promise<HostConnection>;
    /** The token is never serialized. */
    toJSON(): {
        baseUrl: string;
        socket?: string;
    };
}
/** A broker this process launched and must stop. */
export declare class LaunchedBroker extends Broker {
    #private;
    /** The broker's process id. */
    readonly pid: number;
    /** The address it listens on, 127.0.0.1:PORT. */
    readonly addr: string;
    /** Resolves with the exit code (null when killed by a signal). */
    readonly exited: Promise<number | null>;
    /** @internal use {@link launch}. */
    constructor(baseUrl: string, token: string, child: ChildProcess, exited: Promise<number | null>, l: ListeningLine);
    /**
     * Stops the broker: SIGTERM (it drains and closes every socket), then
     * waits for its exit, at most `timeoutMs` (default 20000; the broker's
     * own grace is 10 s). Past the bound it is killed and this rejects.
     * Resolves with exit code 0; any other exit rejects.
     */
    shutdown(opts?: {
        timeoutMs?: number;
    }): Promise<void>;
}
/** Options of {@link connectHost}. */
export interface HostOptions {
    /** Bound on the upgrade and the hello/connected handshake; default 10000 ms. */
    handshakeTimeoutMs?: number;
    /**
     * Returns the host's current state for a snapshot. Called synchronously
     * for each `snapshotRequest`, so `atHostSequence` is the sequence of the
     * last ordered message sent before it. Default: the last payload sent of
     * each ordered type, keyed by type. Return undefined to answer later
     * yourself with {@link HostConnection.sendSnapshot}.
     */
    snapshot?: (request: SnapshotRequestPayload) => JsonObject | undefined;
    /** Largest frame accepted from the broker; default 64 MiB. */
    maxPayload?: number;
}
/** Why a host socket closed. */
export interface CloseInfo {
    code: number;
    reason: string;
    /** Set for a close that pairs with a contract error code (4401-4408). */
    error?: AirlockError;
}
/** A progress or result payload without the fields a reply fills in itself. */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
type ReplyFields = "requestId" | "target" | "viewId";
/** The extra fields of a progress message of family F. */
export type ProgressOf<F extends Family> = DistributiveOmit<FamilyTypes[F]["progress"], ReplyFields>;
/** The extra fields of a result message of family F. */
export type ResultOf<F extends Family> = DistributiveOmit<FamilyTypes[F]["result"], ReplyFields>;
/**
 * A request a view made, as the host sees it. Reply with {@link progress}
 * (families with a non-terminal reply: sourceEdit, graphPublish) and one
 * {@link result}; both fill in `requestId`, `target` and, for candidate,
 * `viewId`. `signal` aborts when the view cancels, the view leaves (the
 * broker's cancel carries `reason: "view-disconnected"`) or the socket
 * closes; replies after that are not sent (the broker would drop them).
 */
export declare class IncomingRequest<F extends Family = Family> {
    #private;
    readonly family: F;
    readonly requestId: string;
    /** The request's target; absent (undefined) for candidate requests. */
    readonly target: Target | undefined;
    /** The requesting view, when the payload names it (candidate, and sourceEdit when given). */
    readonly viewId: string | undefined;
    readonly payload: FamilyTypes[F]["request"];
    /** @internal made by HostConnection. */
    constructor(host: HostConnection, family: F, payload: FamilyTypes[F]["request"]);
    /** Aborted when the request is cancelled or can no longer be answered. */
    get signal(): AbortSignal;
    /** Whether a result was sent or the request was cancelled. */
    get settled(): boolean;
    /** Sends a non-terminal reply (sourceEditReview, graphPublishState). Returns false when not sent. */
    progress(fields: ProgressOf<F>): boolean;
    /** Sends the terminal reply; the request is then settled. Returns false when not sent. */
    result(fields: ResultOf<F>): boolean;
    /** @internal */
    abort(reason: unknown): void;
}
/** Events of a {@link HostConnection}: one per received type, plus the derived ones. */
export type HostEvents = {
    [T in HostReceiveType]: (payload: MessageMap[T], envelope: Envelope<T>) => void;
} & {
    /** Every frame received, before the per-type event. */
    message: (envelope: AnyEnvelope) => void;
    /** A view's request (validate, captureInspect, export, sourceEdit, graphPublish, candidate). */
    request: (request: IncomingRequest) => void;
    /** A view cancelled a request, or left with it in flight. */
    cancel: (request: IncomingRequest, payload: CancelPayload) => void;
    /** The broker refused a frame this host sent (the socket stays open). */
    refusal: (error: AirlockError) => void;
    /** The socket closed; no further event follows. */
    close: (info: CloseInfo) => void;
};
/**
 * Opens /local/ws as the session's host: `Cookie:
 * tensorviz_local_browser=<hostCookieKey>` and `Origin: <launchOrigin>`,
 * then hello, and resolves on `connected`. A refused upgrade or handshake
 * rejects with the {@link AirlockError} of its close code (4401 ...
 * 4408), its `detail` from the broker's error frame when one came first.
 */
export declare function connectHost(session: Session, opts?: HostOptions): Promise<HostConnection>;
/**
 * The session's host socket after the handshake. Send host messages with
 * {@link send} (ordered state gets the next `hostSequence` itself),
 * listen with `on(type, ...)`, answer requests through the `request`
 * event. Snapshot requests are answered automatically (see
 * {@link HostOptions.snapshot}).
 */
export declare class HostConnection extends Emitter<HostEvents> {
    #private;
    readonly workspaceSessionId: string;
    /** The epoch this host started; ordering restarts with each. */
    readonly hostEpoch: number;
    /** @internal use {@link connectHost}. */
    constructor(ws: WebSocket, session: Session, connected: HostConnectedPayload, opts: HostOptions);
    /** The views connected now, by id (kept from `connected` and `viewState`). */
    get views(): ReadonlySet<string>;
    /** The `hostSequence` of the last ordered message sent (0 before any). */
    get hostSequence(): number;
    /** The last payload sent of each ordered type: the default snapshot. */
    get state(): Readonly<Partial<Record<OrderedType, JsonObject>>>;
    /** Whether the socket is open. */
    get open(): boolean;
    /**
     * Bytes queued on the socket and not yet written. A host that sends
     * state faster than the network takes it can check this and skip a
     * frame: ws queues without bound.
     */
    get bufferedAmount(): number;
    /** Requests in flight (not yet answered, cancelled or abandoned). */
    get pending(): ReadonlyMap<string, IncomingRequest>;
    /**
     * Sends a host message. Ordered state (activeTarget, projection,
     * syncState, staleState, focusNode) is stamped with the next
     * `hostSequence` and remembered for snapshots. Returns false, sending
     * nothing, once the socket is closed.
     */
    send<T extends HostSendType>(type: T, payload: MessageMap[T]): boolean;
    /**
     * Handles the requests of one family, with replies typed for it:
     * `host.handle("graphPublish", (req) => req.progress({phase: "uploading"}))`.
     * Returns a function that removes the handler.
     */
    handle<F extends Family>(family: F, handler: (request: IncomingRequest<F>) => void): () => void;
    /** Answers the oldest pending snapshot request with `state` at the current sequence. */
    sendSnapshot(state: JsonObject): boolean;
    /** @internal the untyped send behind send and replies. */
    sendRaw(type: string, payload: JsonObject): boolean;
    /** @internal */
    forget(requestId: string): void;
    /**
     * Closes the socket (1000) and resolves once it is closed, at most
     * `timeoutMs` later (default 5000; then the socket is dropped).
     */
    close(opts?: {
        timeoutMs?: number;
    }): Promise<CloseInfo>;
    /** Resolves when the socket has closed, for whatever reason. */
    get closed(): Promise<CloseInfo>;
    private emitTyped;
}
/** Options of {@link openNodeView}. */
export interface NodeViewOptions {
    /** The Origin the view presents; default the view URL's own (the built-in page's). */
    origin?: string;
    /** Passed to the ViewClient (reconnect policy, handshake bound). */
    view?: Omit<ViewOptions, "workspaceSessionId" | "viewKey" | "baseUrl" | "WebSocket">;
    /** Connect before resolving; default true. */
    connect?: boolean;
}
/**
 * Opens a view of a session from Node, as a browser page would: it
 * bootstraps the view URL's fragment credential with the page's Origin,
 * keeps the view cookie the broker sets and the view key it returns, and
 * connects a {@link ViewClient} whose sockets send that cookie, key and
 * Origin. For
 * tests, tools and Node-side viewers; a browser uses
 * `@airlock/client/view` directly.
 */
export declare function openNodeView(viewUrl: string, opts?: NodeViewOptions): Promise<ViewClient>;
