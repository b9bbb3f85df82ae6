// @airlock/client/view: the browser view's side of the local broker
// (PROTOCOL sections 3, 4 and 12). It trades the one-time credential in
// the URL fragment for the view cookie and the view key, offers the key
// on every socket (a cookie alone is sent to any port of the host, so it
// proves nothing about the page), keeps a /local/ws connection open
// with reconnect (RATIONALE.md, "Why does the view reconnect with capped,
// jittered backoff?"), keeps the host's ordered state with its
// hostSequence, and offers typed request helpers with progress and cancel.
//
// Browser code: it uses only fetch, WebSocket and crypto.getRandomValues,
// all injectable or global, so Node tests can drive it with the ws
// package.

import { Emitter } from "./emitter.js";
import {
  AirlockError,
  CloseCode,
  CONNECTION_CLOSED,
  FAMILIES,
  MESSAGES,
  PROTOCOL_VERSION,
  REQUEST_CANCELLED,
  TIMEOUT,
  decodeEnvelope,
  encodeEnvelope,
  isOrderedType,
  viewProtocols,
  type AckPayload,
  type AnyEnvelope,
  type BootstrapResponse,
  type ConnectionStatePayload,
  type Envelope,
  type Family,
  type FamilyTypes,
  type JsonObject,
  type MessageMap,
  type OrderedType,
  type RelayedErrorPayload,
  type SnapshotPayload,
  type Target,
  type ViewConnectedPayload,
  type ViewReceiveType,
  type ViewSendType,
} from "./messages.js";

export * from "./messages.js";

// ---------------------------------------------------------------- injection

/** The part of a WebSocket the view uses: the browser's and the ws package's both fit. */
export interface WebSocketLike {
  readonly readyState: number;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}
/** A WebSocket constructor: `globalThis.WebSocket` in a browser. */
export type WebSocketConstructor = new (url: string, protocols?: string[]) => WebSocketLike;
/** A fetch: `globalThis.fetch` in a browser. */
export type FetchLike = (url: string, init: RequestInit) => Promise<Pick<Response, "ok" | "status" | "json">>;

const OPEN = 1;

// ---------------------------------------------------------------- bootstrap

/** The credential pair a view page's URL fragment carries: `#<workspaceSessionId>.<viewCredential>`. */
export interface ViewFragment {
  workspaceSessionId: string;
  viewCredential: string;
}

/** Reads `#<workspaceSessionId>.<viewCredential>` (leading `#` optional); undefined if it is not one. */
export function parseFragment(hash: string): ViewFragment | undefined {
  const frag = hash.startsWith("#") ? hash.slice(1) : hash;
  const dot = frag.indexOf(".");
  if (dot <= 0 || dot === frag.length - 1) return undefined;
  return { workspaceSessionId: frag.slice(0, dot), viewCredential: frag.slice(dot + 1) };
}

/**
 * Takes the credential from `location.hash` and removes it from the
 * address at once (history.replaceState), so it is not kept in history,
 * bookmarks or a copied URL. Undefined when the page has none.
 */
export function takeFragment(): ViewFragment | undefined {
  const loc = (globalThis as { location?: Location }).location;
  if (!loc?.hash) return undefined;
  const f = parseFragment(loc.hash);
  (globalThis as { history?: History }).history?.replaceState(null, "", loc.pathname + loc.search);
  return f;
}

/** Options of {@link bootstrap}. */
export interface BootstrapOptions {
  /** The broker's base URL; default "" (same origin, as a page the broker serves). */
  baseUrl?: string;
  /** Default `globalThis.fetch`. */
  fetch?: FetchLike;
}

/**
 * Trades the one-time view credential for the view cookie (POST
 * /local/bootstrap; the browser stores the HttpOnly cookie) and the view
 * key, which it resolves with beside the session's facts: keep it in
 * sessionStorage (never localStorage, a URL or a log) and pass it to
 * {@link ViewClient} and to the door (`viewProtocols`). Refusals reject
 * with an {@link AirlockError} carrying `status`: 401 INVALID_CREDENTIALS,
 * 403 INVALID_ORIGIN, 410 CREDENTIAL_EXPIRED.
 */
export async function bootstrap(fragment: ViewFragment, opts: BootstrapOptions = {}): Promise<BootstrapResponse> {
  const f = opts.fetch ?? (globalThis.fetch as FetchLike);
  const res = await f(`${opts.baseUrl ?? ""}/local/bootstrap`, {
    method: "POST",
    credentials: "same-origin",
    cache: "no-store",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ workspaceSessionId: fragment.workspaceSessionId, viewCredential: fragment.viewCredential }),
  });
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    body = undefined;
  }
  if (!res.ok) {
    const code = (body as { error?: { code?: unknown } } | undefined)?.error?.code;
    throw new AirlockError(typeof code === "string" ? code : `HTTP_${res.status}`, { status: res.status });
  }
  return body as BootstrapResponse;
}

// ---------------------------------------------------------------- view client

/** Reconnect policy: capped exponential backoff with jitter. */
export interface ReconnectOptions {
  /** First delay; default 250 ms. */
  initialDelayMs?: number;
  /** Cap on any delay; default 10000 ms. */
  maxDelayMs?: number;
  /** Growth per failed attempt; default 2. */
  factor?: number;
  /** Attempts after a loss before giving up ("failed"); default Infinity. 0 turns reconnect off. */
  maxAttempts?: number;
}

/** The reconnect policy's defaults. */
export const RECONNECT_DEFAULTS: Readonly<Required<ReconnectOptions>> = { initialDelayMs: 250, maxDelayMs: 10_000, factor: 2, maxAttempts: Infinity };

/**
 * The delay before retry number `attempt` (0-based): the capped
 * exponential `min(max, initial * factor^attempt)`, then "equal jitter":
 * half of it fixed, half random, so views that lost the broker together do
 * not come back together, and no retry comes at once.
 */
export function backoffDelay(attempt: number, rc: Readonly<Required<ReconnectOptions>> = RECONNECT_DEFAULTS, random: () => number = Math.random): number {
  const d = Math.min(rc.maxDelayMs, rc.initialDelayMs * rc.factor ** attempt);
  return d / 2 + (random() * d) / 2;
}

/** Options of {@link ViewClient}. */
export interface ViewOptions {
  /** The session, from {@link bootstrap} (or kept from an earlier page load). */
  workspaceSessionId: string;
  /**
   * The view key {@link bootstrap} returned, offered in
   * Sec-WebSocket-Protocol on every socket. Leave it out only for a broker
   * run with local.view_key off (the cookie alone, as the seed).
   */
  viewKey?: string;
  /** The broker's base URL (http://127.0.0.1:PORT); default the page's own origin. */
  baseUrl?: string;
  /** Default `globalThis.WebSocket`. */
  WebSocket?: WebSocketConstructor;
  reconnect?: ReconnectOptions;
  /** Bound on upgrade + hello/connected; default 10000 ms. */
  handshakeTimeoutMs?: number;
  /** Jitter source in [0, 1); default Math.random. */
  random?: () => number;
}

/**
 * Where the view's connection stands.
 * - `connecting`: first connection under way; `open`: handshake done;
 * - `reconnecting`: lost, a retry is scheduled or under way;
 * - `expired`: the session expired (close 4402, or 410 at bootstrap): final;
 * - `failed`: refused for good (4401, 4403-4408) or out of attempts: final;
 * - `closed`: closed by {@link ViewClient.close}: final.
 */
export type ConnectionStatus = "idle" | "connecting" | "open" | "reconnecting" | "expired" | "failed" | "closed";

/** A request in flight: its terminal result, its progress, and cancel. */
export interface RequestHandle<R, P = never> {
  readonly requestId: string;
  /**
   * Resolves with the terminal result; rejects with an AirlockError: the
   * broker's refusal (detail no-host, busy, capability ...),
   * REQUEST_CANCELLED after {@link cancel}, CONNECTION_CLOSED or
   * CREDENTIAL_EXPIRED when the socket is lost (the broker cancels the
   * request on the host then).
   */
  readonly result: Promise<R>;
  /** Registers a listener for non-terminal replies (sourceEditReview, graphPublishState). */
  onProgress(listener: (progress: P) => void): RequestHandle<R, P>;
  /** Cancels: sends the family's cancel (candidate has none) and rejects `result` with REQUEST_CANCELLED. */
  cancel(): void;
}

/** Events of a {@link ViewClient}. */
export type ViewEvents = {
  [T in ViewReceiveType]: (payload: MessageMap[T], envelope: Envelope<T>) => void;
} & {
  /** Every frame received, before the per-type event. */
  message: (envelope: AnyEnvelope) => void;
  /** The connection status changed; `error` says why for a loss or a final state. */
  status: (status: ConnectionStatus, error?: AirlockError) => void;
  /** Ordered host state arrived (or a snapshot replaced it): the view's state changed. */
  state: (state: Readonly<JsonObject>, lastHostSequence: number | null) => void;
  /** The state went stale (host left, new host epoch, connection lost) or fresh again (snapshot). */
  stale: (stale: boolean) => void;
  /** The broker refused a frame this view sent (no requestId of a pending request). */
  refusal: (error: AirlockError) => void;
};

interface Pending {
  family: Family;
  target: Target | undefined;
  resolve: (v: never) => void;
  reject: (e: AirlockError) => void;
  progress: Array<(p: never) => void>;
}

/**
 * One browser view of a session. Call {@link connect} after
 * {@link bootstrap}; it keeps the socket up until the session expires,
 * the broker refuses it for good, or {@link close}.
 *
 * State: `state` holds the host's ordered state by type (replaced whole by
 * a snapshot), `lastHostSequence` the last sequence seen in this host
 * epoch. After every (re)connect, and whenever a host arrives, the view
 * asks for a snapshot with `lastHostSequence`; the state is `stale` from
 * a loss or host change until that snapshot arrives.
 */
export class ViewClient extends Emitter<ViewEvents> {
  readonly workspaceSessionId: string;
  #status: ConnectionStatus = "idle";
  #ws: WebSocketLike | undefined;
  #viewId: string | undefined;
  #hostConnected = false;
  #hostEpoch: number | undefined;
  #lastSeq: number | null = null;
  #state: JsonObject = {};
  #stale = true;
  #attempt = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #handshakeTimer: ReturnType<typeof setTimeout> | undefined;
  readonly #pending = new Map<string, Pending>();
  readonly #url: string;
  readonly #protocols: string[] | undefined;
  readonly #WS: WebSocketConstructor;
  readonly #rc: Required<ReconnectOptions>;
  readonly #random: () => number;
  readonly #handshakeMs: number;
  #firstOpen: { resolve: () => void; reject: (e: AirlockError) => void } | undefined;

  constructor(opts: ViewOptions) {
    super();
    this.workspaceSessionId = opts.workspaceSessionId;
    const base = opts.baseUrl ?? (globalThis as { location?: Location }).location?.origin;
    if (!base) throw new TypeError("airlock view: baseUrl is required outside a page");
    this.#url = `${base.replace(/^http/, "ws")}/local/ws`;
    this.#protocols = opts.viewKey ? viewProtocols(opts.viewKey) : undefined;
    const WS = opts.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (!WS) throw new TypeError("airlock view: no WebSocket constructor");
    this.#WS = WS;
    this.#rc = { ...RECONNECT_DEFAULTS, ...opts.reconnect };
    this.#random = opts.random ?? Math.random;
    this.#handshakeMs = opts.handshakeTimeoutMs ?? 10_000;
  }

  get status(): ConnectionStatus {
    return this.#status;
  }
  /** This socket's view id (changes with each reconnect). */
  get viewId(): string | undefined {
    return this.#viewId;
  }
  get hostConnected(): boolean {
    return this.#hostConnected;
  }
  get hostEpoch(): number | undefined {
    return this.#hostEpoch;
  }
  /** The last hostSequence seen in the current host epoch (null: none). */
  get lastHostSequence(): number | null {
    return this.#lastSeq;
  }
  /** The host's state: ordered types by name, or what the last snapshot held. */
  get state(): Readonly<JsonObject> {
    return this.#state;
  }
  /** Whether the state may be behind the host's (see the class notes). */
  get stale(): boolean {
    return this.#stale;
  }

  /**
   * Opens the socket and keeps it open. Resolves on the first `connected`;
   * rejects if the first attempt ends in a final state (expired, failed,
   * closed). Later losses are retried per the reconnect policy.
   */
  connect(): Promise<void> {
    if (this.#status !== "idle") throw new Error("airlock view: connect called twice");
    return new Promise((resolve, reject) => {
      this.#firstOpen = { resolve, reject };
      this.#setStatus("connecting");
      this.#dial();
    });
  }

  /** Closes for good: no reconnect; pending requests reject with CONNECTION_CLOSED. */
  close(): void {
    if (this.#final()) return;
    this.#finish("closed", new AirlockError(CONNECTION_CLOSED, { message: "airlock view: closed" }));
  }

  /** Marks the view expired (a 410 at bootstrap, say): final. */
  expire(): void {
    if (this.#final()) return;
    this.#finish("expired", new AirlockError("CREDENTIAL_EXPIRED", { closeCode: CloseCode.CREDENTIAL_EXPIRED }));
  }

  /** Sends a view message; false when the socket is not open. */
  send<T extends ViewSendType>(type: T, payload: MessageMap[T]): boolean {
    if (!MESSAGES[type].from.includes("view")) throw new TypeError(`airlock view: a view cannot send ${type}`);
    if (!this.#ws || this.#ws.readyState !== OPEN || this.#status !== "open") return false;
    this.#ws.send(encodeEnvelope(this.workspaceSessionId, type, payload));
    return true;
  }

  /** Asks the host to reveal a node. */
  revealNode(nodeId: string): boolean {
    return this.send("revealNode", { nodeId });
  }
  /** Sends an ack to the host. */
  ack(payload: AckPayload = {}): boolean {
    return this.send("ack", payload);
  }

  validate(target: Target, extra: JsonObject = {}): RequestHandle<FamilyTypes["validate"]["result"]> {
    return this.#request("validate", { ...extra, target });
  }
  captureInspect(target: Target, extra: JsonObject = {}): RequestHandle<FamilyTypes["captureInspect"]["result"]> {
    return this.#request("captureInspect", { ...extra, target });
  }
  export(target: Target, extra: JsonObject = {}): RequestHandle<FamilyTypes["export"]["result"]> {
    return this.#request("export", { ...extra, target });
  }
  /** Needs a session minted with canProposeSourceEdits (else refused, detail `capability`). */
  sourceEdit(target: Target, extra: JsonObject = {}): RequestHandle<FamilyTypes["sourceEdit"]["result"], FamilyTypes["sourceEdit"]["progress"]> {
    return this.#request("sourceEdit", { ...extra, target });
  }
  /** `graphGzipBase64`: base64 of gzip data, at most 10 MiB decoded. */
  graphPublish(target: Target, graphGzipBase64: string, extra: JsonObject = {}): RequestHandle<FamilyTypes["graphPublish"]["result"], FamilyTypes["graphPublish"]["progress"]> {
    return this.#request("graphPublish", { ...extra, target, graphGzipBase64 });
  }
  /** The request names this view's own id, as the contract requires. */
  candidate(extra: JsonObject = {}): RequestHandle<FamilyTypes["candidate"]["result"]> {
    return this.#request("candidate", { ...extra, viewId: this.#viewId ?? "" });
  }

  #request<R, P>(family: Family, fields: JsonObject): RequestHandle<R, P> {
    const requestId = newRequestId();
    const target = fields["target"] as Target | undefined;
    let settle!: Pending;
    const result = new Promise<R>((resolve, reject) => {
      settle = { family, target, resolve: resolve as (v: never) => void, reject, progress: [] };
    });
    result.catch(() => {}); // a cancelled, never-awaited request is not an unhandled rejection
    const handle: RequestHandle<R, P> = {
      requestId,
      result,
      onProgress: (l) => {
        settle.progress.push(l as (p: never) => void);
        return handle;
      },
      cancel: () => {
        if (this.#pending.get(requestId) !== settle) return;
        this.#pending.delete(requestId);
        const cancel = FAMILIES[family].cancel;
        if (cancel) this.send(cancel as ViewSendType, { requestId, target } as never);
        settle.reject(new AirlockError(REQUEST_CANCELLED, { requestId }));
      },
    };
    const type = FAMILIES[family].request as ViewSendType;
    this.#pending.set(requestId, settle);
    if (!this.send(type, { ...fields, requestId } as never)) {
      this.#pending.delete(requestId);
      settle.reject(new AirlockError(CONNECTION_CLOSED, { requestId, message: "airlock view: not connected" }));
    }
    return handle;
  }

  // ------------------------------------------------------------ socket

  #dial(): void {
    const ws = this.#protocols ? new this.#WS(this.#url, this.#protocols) : new this.#WS(this.#url);
    this.#ws = ws;
    this.#handshakeTimer = setTimeout(() => {
      this.#handshakeTimer = undefined;
      ws.close(CloseCode.NORMAL, "handshake timeout");
      this.#lost(ws, new AirlockError(TIMEOUT, { message: "airlock view: no connected within the handshake bound" }));
    }, this.#handshakeMs);
    ws.onopen = () => ws.send(encodeEnvelope(this.workspaceSessionId, "hello", {}));
    ws.onmessage = (ev) => {
      if (this.#ws === ws && typeof ev.data === "string") this.#receive(ev.data);
    };
    ws.onerror = () => {}; // the close that follows says what happened
    ws.onclose = (ev) => {
      const err = AirlockError.fromClose(ev.code, ev.reason);
      this.#lost(ws, err);
    };
  }

  /** A socket ended: final on 4402 and the other contract refusals, else a scheduled retry. */
  #lost(ws: WebSocketLike, err: AirlockError): void {
    if (this.#ws !== ws || this.#final()) return;
    clearTimeout(this.#handshakeTimer);
    ws.onopen = ws.onmessage = ws.onclose = null;
    this.#ws = undefined;
    this.#rejectAll(err);
    this.#markStale(true);
    if (err.code === "CREDENTIAL_EXPIRED") return this.#finish("expired", err);
    if (err.code !== CONNECTION_CLOSED && err.code !== TIMEOUT) return this.#finish("failed", err);
    if (this.#attempt >= this.#rc.maxAttempts) return this.#finish("failed", err);
    const delay = backoffDelay(this.#attempt, this.#rc, this.#random);
    this.#attempt++;
    this.#setStatus("reconnecting", err);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#dial();
    }, delay);
  }

  #finish(status: "expired" | "failed" | "closed", err: AirlockError): void {
    clearTimeout(this.#timer);
    clearTimeout(this.#handshakeTimer);
    const ws = this.#ws;
    this.#ws = undefined;
    if (ws) {
      ws.onopen = ws.onmessage = ws.onclose = null;
      if (ws.readyState <= OPEN) ws.close(CloseCode.NORMAL, "bye");
    }
    this.#rejectAll(err);
    this.#hostConnected = false;
    this.#setStatus(status, err);
    this.#firstOpen?.reject(err);
    this.#firstOpen = undefined;
  }

  #final(): boolean {
    return this.#status === "expired" || this.#status === "failed" || this.#status === "closed";
  }

  #setStatus(s: ConnectionStatus, err?: AirlockError): void {
    this.#status = s;
    if (err) this.emit("status", s, err);
    else this.emit("status", s);
  }

  #rejectAll(err: AirlockError): void {
    const all = [...this.#pending.entries()];
    this.#pending.clear();
    for (const [id, p] of all) p.reject(new AirlockError(err.code, { requestId: id, closeCode: err.closeCode, detail: err.detail }));
  }

  #markStale(stale: boolean): void {
    if (this.#stale === stale) return;
    this.#stale = stale;
    this.emit("stale", stale);
  }

  /** A new host epoch: its sequence restarts, so what we hold is another host's. */
  #epoch(epoch: number): void {
    if (this.#hostEpoch !== undefined && this.#hostEpoch !== epoch) {
      this.#lastSeq = null;
      this.#markStale(true);
    }
    this.#hostEpoch = epoch;
  }

  #askSnapshot(): void {
    this.send("snapshotRequest", { lastHostSequence: this.#lastSeq });
  }

  #receive(text: string): void {
    const env = decodeEnvelope(text);
    if (!env || env.protocolVersion !== PROTOCOL_VERSION) return;
    this.emit("message", env);
    switch (env.type) {
      case "connected": {
        const p = env.payload as ViewConnectedPayload;
        clearTimeout(this.#handshakeTimer);
        this.#viewId = p.viewId;
        this.#hostConnected = p.hostConnected;
        this.#epoch(p.hostEpoch);
        this.#attempt = 0;
        this.#setStatus("open");
        this.#askSnapshot();
        this.#firstOpen?.resolve();
        this.#firstOpen = undefined;
        break;
      }
      case "connectionState":
        this.#hostState(env.payload);
        break;
      case "snapshot":
        this.#snapshot(env.payload);
        break;
      case "error": {
        const err = AirlockError.fromFrame(env.payload);
        if (err) {
          const pending = err.requestId ? this.#pending.get(err.requestId) : undefined;
          if (pending) {
            this.#pending.delete(err.requestId!);
            pending.reject(err);
          } else this.emit("refusal", err);
        }
        break;
      }
      default:
        if (isOrderedType(env.type) && typeof env.hostSequence === "number") this.#ordered(env.type, env.payload as JsonObject, env.hostSequence);
        else this.#reply(env);
    }
    (this.emit as (e: string, p: unknown, env: unknown) => void)(env.type, env.payload, env);
  }

  #hostState(p: ConnectionStatePayload): void {
    const was = this.#hostConnected;
    const epoch = this.#hostEpoch;
    this.#epoch(p.hostEpoch);
    this.#hostConnected = p.state === "connected";
    // A host that arrived (or a new one) gets asked; the connectionState
    // that follows `connected` repeats what `connected` said, and was asked.
    if (this.#hostConnected && (!was || epoch !== p.hostEpoch)) this.#askSnapshot();
    else if (!this.#hostConnected) this.#markStale(true);
  }

  #snapshot(p: SnapshotPayload): void {
    this.#state = { ...p.state };
    this.#lastSeq = p.atHostSequence;
    this.emit("state", this.#state, this.#lastSeq);
    this.#markStale(false);
  }

  #ordered(type: OrderedType, payload: JsonObject, seq: number): void {
    if (this.#lastSeq !== null && seq <= this.#lastSeq) return; // already in a snapshot
    this.#state = { ...this.#state, [type]: payload };
    this.#lastSeq = seq;
    this.emit("state", this.#state, seq);
  }

  #reply(env: AnyEnvelope): void {
    const spec = MESSAGES[env.type];
    if (!spec.family || (spec.kind !== "progress" && spec.kind !== "result")) return;
    const id = (env.payload as { requestId?: unknown }).requestId;
    const p = typeof id === "string" ? this.#pending.get(id) : undefined;
    if (!p || p.family !== spec.family) return;
    if (spec.kind === "progress") {
      for (const l of p.progress) l(env.payload as never);
      return;
    }
    this.#pending.delete(id as string);
    p.resolve(env.payload as never);
  }
}

/** A fresh requestId: "r" and 24 hex digits from the platform's CSPRNG (unguessable, so no other view can name it). */
function newRequestId(): string {
  const b = new Uint8Array(12);
  globalThis.crypto.getRandomValues(b);
  return "r" + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}
