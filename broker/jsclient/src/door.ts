// The door of @airlock/client: the executor side of /channel and
// /local/channel for a browser page or a worker over a WebSocket
// (PROTOCOL sections 5 and 6; the Go counterpart is broker/channel/link's
// Door run by broker/channel/envclient). It connects, sends its catalog,
// answers each call through a handler, and reconnects when the
// connection drops. What it does with one call is executor.ts's, which
// the transport-free door of the channel module shares.
//
// Every inbound call is validated by wire before the handler sees it and
// every outbound answer is validated before it is sent; whatever the
// handler does wrong (throws, rejects, returns something that is not an
// answer) is answered exec-threw, so the broker always gets one valid
// answer per call and never waits for page-timeout on a broken tool.
// Reconnect policy: RATIONALE.md, "Why does the JavaScript door stop
// reconnecting on some closes?".

import { OVERLOADED, SHUTTING_DOWN, UNATTRIBUTED_CALL, type Call, type Rule } from "./wire.js";
import {
  admit,
  contain,
  encode,
  normalize,
  readCall,
  refuse,
  type Bounds,
  type Descriptor,
  type HandlerResult,
  type Handler,
} from "./executor.js";

export { observe, refuse, utf8Length } from "./executor.js";
export type { Bounds, CallContext, Descriptor, Handler, HandlerResult, Tool } from "./executor.js";

/** The part of a WebSocket the door uses: the browser's, a worker's, or
 * one made by the `ws` package in Node. */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  // Events are typed loosely so that the DOM's WebSocket and ws's both
  // fit; the door reads only data (message), code and reason (close).
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
export type DoorEvent =
  | { type: "connected" }
  | { type: "catalog"; descriptors: number }
  | { type: "disconnected"; code: number; reason: string }
  | { type: "reconnecting"; attempt: number; inMs: number }
  | { type: "dropped"; why: "binary" | "too-large" | "unreadable" | "duplicate" }
  | { type: "answered"; callId: string; outcome: "ok" | Rule }
  | { type: "stopped"; code: number; reason: string };

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

// Closes after which reconnecting cannot help (PROTOCOL sections 4.4 and
// 6): the credential is missing or wrong (1008), another page took over
// (page-replaced), or the session expired (4402).
const FINAL_REASONS = new Set(["executor-unauthenticated", "bearer-refused", "page-replaced", "environment-replaced"]);
const CREDENTIAL_EXPIRED = 4402;

// A connection that stayed up this long, or carried a call, starts the
// backoff over (envclient's stableAfter).
const STABLE_AFTER_MS = 5000;

const OPEN = 1;

/** createExecutorDoor connects to the broker and serves calls until
 * close. See the module comment. */
export function createExecutorDoor(opts: DoorOptions): Door {
  return new DoorImpl(opts);
}

class DoorImpl implements Door {
  private readonly url: string;
  private readonly factory: WebSocketFactory;
  private readonly maxInflight: number;
  private readonly base: number;
  private readonly cap: number;
  private catalog: Descriptor[];
  private byId = new Map<string, Descriptor>();
  private ws: WebSocketLike | undefined;
  private inflight = new Map<string, AbortController>();
  private draining = false;
  private stopped = false;
  private attempt = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private resolveDone!: (e: DoorEnd) => void;
  readonly done: Promise<DoorEnd>;

  constructor(private readonly opts: DoorOptions) {
    this.url = String(opts.url);
    const global = (globalThis as { WebSocket?: new (url: string) => WebSocketLike }).WebSocket;
    const factory = opts.WebSocket ?? (global ? (u: string) => new global(u) : undefined);
    if (!factory) throw new TypeError("createExecutorDoor: no WebSocket: pass one in options.WebSocket");
    if (typeof opts.handler !== "function") throw new TypeError("createExecutorDoor: handler must be a function");
    this.factory = factory;
    this.maxInflight = opts.maxInflight ?? 64;
    this.base = opts.backoffBaseMs ?? 100;
    this.cap = Math.max(this.base, opts.backoffMaxMs ?? 10000);
    this.catalog = normalize(opts.catalog);
    this.index();
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
    this.connect();
  }

  get connected(): boolean {
    return this.ws?.readyState === OPEN;
  }

  setCatalog(descriptors: readonly Descriptor[]): void {
    this.catalog = normalize(descriptors);
    this.index();
    if (this.connected) this.sendCatalog(this.ws!);
  }

  async close(graceMs = 5000): Promise<void> {
    if (this.stopped) {
      await this.done;
      return;
    }
    this.draining = true;
    clearTimeout(this.timer);
    if (this.inflight.size > 0 && this.connected) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, graceMs);
        this.idle = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
    for (const c of this.inflight.values()) c.abort(new Error("door closed"));
    this.stop({ code: 1000, reason: "" });
    await this.done;
  }

  // idle is called when the last running call settles while draining.
  private idle: (() => void) | undefined;

  private index(): void {
    this.byId = new Map(this.catalog.map((d) => [d.descriptorId, d]));
  }

  private emit(e: DoorEvent): void {
    try {
      this.opts.onEvent?.(e);
    } catch {
      // a broken listener does not break the door
    }
  }

  private stop(end: DoorEnd): void {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.timer);
    const ws = this.ws;
    this.ws = undefined;
    if (ws) {
      // Handlers stay set, as no-ops: ws (Node) throws on an error event
      // nobody listens to, which closing a socket still connecting raises.
      const ignore = () => {};
      ws.onmessage = ignore;
      ws.onclose = ignore;
      ws.onerror = ignore;
      ws.onopen = ignore;
      try {
        ws.close(end.code === 1000 ? 1000 : undefined, end.code === 1000 ? "" : undefined);
      } catch {
        // already closed
      }
    }
    this.emit({ type: "stopped", ...end });
    this.resolveDone(end);
  }

  private connect(): void {
    if (this.stopped) return;
    let ws: WebSocketLike;
    try {
      ws = this.factory(this.url);
    } catch {
      this.retry(false);
      return;
    }
    this.ws = ws;
    const opened = Date.now();
    let carried = false;
    ws.onopen = () => {
      this.emit({ type: "connected" });
      this.sendCatalog(ws);
    };
    ws.onmessage = (ev: { data: unknown }) => {
      if (this.handleFrame(ws, ev.data)) carried = true;
    };
    ws.onerror = () => {
      // onclose follows and decides
    };
    ws.onclose = (ev: { code: number; reason: string }) => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      // Calls of this connection can no longer be answered: the broker
      // settles them page-closed.
      for (const c of this.inflight.values()) c.abort(new Error("connection closed"));
      this.inflight.clear();
      this.idle?.();
      this.emit({ type: "disconnected", code: ev.code, reason: ev.reason });
      if (this.draining || FINAL_REASONS.has(ev.reason) || ev.code === CREDENTIAL_EXPIRED) {
        this.stop({ code: ev.code, reason: ev.reason });
        return;
      }
      this.retry(carried || Date.now() - opened >= STABLE_AFTER_MS);
    };
  }

  // retry waits (full jitter over the upper half of a window that doubles
  // from backoffBaseMs to backoffMaxMs) and connects again.
  private retry(reset: boolean): void {
    if (reset) this.attempt = 0;
    this.attempt++;
    const window = Math.min(this.base * 2 ** Math.min(this.attempt - 1, 30), this.cap);
    const wait = Math.round(window / 2 + Math.random() * (window / 2));
    this.emit({ type: "reconnecting", attempt: this.attempt, inMs: wait });
    this.timer = setTimeout(() => this.connect(), wait);
  }

  private sendCatalog(ws: WebSocketLike): void {
    const frame = JSON.stringify({ type: "catalog", descriptors: this.catalog });
    if (send(ws, frame)) this.emit({ type: "catalog", descriptors: this.catalog.length });
  }

  // handleFrame answers one frame from the broker and reports whether it
  // was a call that was run.
  private handleFrame(ws: WebSocketLike, data: unknown): boolean {
    if (typeof data !== "string") {
      this.emit({ type: "dropped", why: "binary" });
      return false;
    }
    const inbound = readCall(data);
    if ("dropped" in inbound) {
      this.emit({ type: "dropped", why: inbound.dropped });
      return false;
    }
    if ("refused" in inbound) {
      this.answer(ws, inbound.callId, refuse(inbound.refused));
      return false;
    }
    const call = inbound.call;
    if (this.inflight.has(call.callId)) {
      // The broker never reuses a running callId; an answer to this one
      // would settle the first call.
      this.emit({ type: "dropped", why: "duplicate" });
      return false;
    }
    const d = this.byId.get(call.descriptorId);
    let early = this.draining ? refuse(SHUTTING_DOWN) : admit(call, d);
    if (early === undefined && this.inflight.size >= this.maxInflight) early = refuse(OVERLOADED);
    if (early !== undefined || d === undefined) {
      this.answer(ws, call.callId, early ?? refuse(UNATTRIBUTED_CALL));
      return false;
    }
    void this.run(ws, call, d);
    return true;
  }

  // run calls the handler under containment (executor.ts contain: its
  // time bound, and cut off at once when this call's connection or the
  // door goes), then answers.
  private async run(ws: WebSocketLike, call: Call, d: Descriptor): Promise<void> {
    const ctl = new AbortController();
    this.inflight.set(call.callId, ctl);
    const result = await contain(this.opts.handler, call, d, ctl.signal);
    if (this.inflight.get(call.callId) !== ctl) return; // the connection is gone
    this.inflight.delete(call.callId);
    this.answer(ws, call.callId, result, d.bounds);
    if (this.draining && this.inflight.size === 0) this.idle?.();
  }

  // answer encodes and sends an answer to callId, held to bounds when
  // given (executor.ts encode).
  private answer(ws: WebSocketLike, callId: string, r: HandlerResult, bounds?: Bounds): void {
    const frame = encode(callId, r, bounds);
    if (ws.readyState !== OPEN || !send(ws, frame.text)) return;
    this.emit({ type: "answered", callId, outcome: frame.outcome });
  }
}

function send(ws: WebSocketLike, frame: string): boolean {
  try {
    ws.send(frame);
    return true;
  } catch {
    return false;
  }
}
