// The door of @airlock/client: the executor side of /channel and
// /local/channel for a browser page or a worker (PROTOCOL sections 5 and
// 6; the seed's createExecutorDoor; the Go counterpart is
// broker/channel/link's Door run by broker/channel/envclient). It
// connects, sends its catalog, answers each call through a handler, and
// reconnects when the connection drops.
//
// Every inbound call is validated by wire before the handler sees it and
// every outbound answer is validated before it is sent; whatever the
// handler does wrong (throws, rejects, returns something that is not an
// answer) is answered exec-threw, so the broker always gets one valid
// answer per call and never waits for page-timeout on a broken tool.
// Reconnect policy: RATIONALE.md, "Why does the JavaScript door stop
// reconnecting on some closes?".

import {
  BOUNDS_MISMATCH,
  EXEC_THREW,
  EXEC_TIMEOUT,
  MAX_CALL_BYTES,
  MAX_OUTPUT_BYTES,
  OUTPUT_TOO_LARGE,
  OVERLOADED,
  SHUTTING_DOWN,
  UNATTRIBUTED_CALL,
  UNKNOWN_TOOL,
  WHY,
  callIdOf,
  encodeAnswer,
  parseCall,
  type AnswerInit,
  type Budget,
  type Call,
  type JSONObject,
  type Rule,
} from "./wire.js";

// The descriptor types are the ones generated from the contract's JSON
// Schema (schemas/channel.schema.json), so the door's catalog cannot
// drift from what the broker accepts.
import type { Bounds, Descriptor, Tool } from "./generated/channel.js";
export type { Bounds, Descriptor, Tool };

/** What a handler returns: an observation or a refusal (use observe and
 * refuse). The door fills in v and the call's callId. */
export type HandlerResult =
  | { ok: true; observed: JSONObject; budget?: Budget }
  | { ok: false; refused: Rule; why?: string; budget?: Budget };

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
export function observe(observed: JSONObject, budget?: Budget): HandlerResult {
  return budget === undefined ? { ok: true, observed } : { ok: true, observed, budget };
}

/** refuse builds a refusal; why defaults to the rule's static text. */
export function refuse(rule: Rule, why?: string, budget?: Budget): HandlerResult {
  const r: HandlerResult = { ok: false, refused: rule };
  if (why !== undefined) r.why = why;
  if (budget !== undefined) r.budget = budget;
  return r;
}

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

// maxCallFrame bounds a frame from the broker: a call body is capped at
// MAX_CALL_BYTES on POST /v1/calls, plus the envelope (envclient's
// maxCallFrame). maxAnswerFrame is the broker's bound on a peer's frame.
const maxCallFrame = MAX_CALL_BYTES + 4096;
const maxAnswerFrame = MAX_OUTPUT_BYTES + (1 << 20);

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
    if (data.length > maxCallFrame / 3 && utf8Length(data) > maxCallFrame) {
      this.emit({ type: "dropped", why: "too-large" });
      return false;
    }
    const verdict = parseCall(data);
    if (!verdict.ok) {
      // As link.Door.Handle: refuse a call whose callId can be read, drop
      // the rest (no call could be settled by it).
      const id = callIdOf(data);
      if (id === undefined) this.emit({ type: "dropped", why: "unreadable" });
      else this.answer(ws, id, refuse(verdict.rule));
      return false;
    }
    const call = verdict.value;
    const d = this.byId.get(call.descriptorId);
    if (this.inflight.has(call.callId)) {
      // The broker never reuses a running callId; an answer to this one
      // would settle the first call.
      this.emit({ type: "dropped", why: "duplicate" });
      return false;
    }
    let early: Rule | undefined;
    if (this.draining) early = SHUTTING_DOWN;
    else if (d === undefined) early = UNATTRIBUTED_CALL;
    else if (canonical(call.boundsEcho) !== canonical(d.bounds)) early = BOUNDS_MISMATCH;
    else if (!d.tools.some((t) => t.name === call.tool)) early = UNKNOWN_TOOL;
    else if (this.inflight.size >= this.maxInflight) early = OVERLOADED;
    if (early !== undefined || d === undefined) {
      this.answer(ws, call.callId, refuse(early ?? UNATTRIBUTED_CALL));
      return false;
    }
    void this.run(ws, call, d);
    return true;
  }

  // run calls the handler under containment and a timer, then answers.
  private async run(ws: WebSocketLike, call: Call, d: Descriptor): Promise<void> {
    const ctl = new AbortController();
    this.inflight.set(call.callId, ctl);
    let timer: ReturnType<typeof setTimeout> | undefined;
    // The call ends at its time bound, or at once when its connection or
    // the door goes (ctl aborted), whatever the handler does.
    const cut = new Promise<HandlerResult>((resolve) => {
      timer = setTimeout(() => resolve(refuse(EXEC_TIMEOUT)), d.bounds.timeoutMs);
      ctl.signal.addEventListener("abort", () => resolve(refuse(EXEC_THREW)), { once: true });
    });
    let result: HandlerResult;
    try {
      const ran = Promise.resolve().then(() => (ctl.signal.aborted ? refuse(EXEC_THREW) : this.opts.handler(call, { signal: ctl.signal, descriptor: d })));
      result = await Promise.race([ran, cut]);
    } catch {
      result = refuse(EXEC_THREW);
    } finally {
      clearTimeout(timer);
      ctl.abort(new Error("call settled"));
    }
    if (this.inflight.get(call.callId) !== ctl) return; // the connection is gone
    this.inflight.delete(call.callId);
    this.answer(ws, call.callId, result, d.bounds);
    if (this.draining && this.inflight.size === 0) this.idle?.();
  }

  // answer encodes and sends an answer to callId. An answer that would
  // not pass the broker's validator, or would not fit the descriptor's
  // bounds, is replaced by the refusal the broker would settle the call
  // with, so the caller learns at once.
  private answer(ws: WebSocketLike, callId: string, r: HandlerResult, bounds?: Bounds): void {
    const frame = encode(callId, r, bounds);
    if (ws.readyState !== OPEN || !send(ws, frame.text)) return;
    this.emit({ type: "answered", callId, outcome: frame.outcome });
  }
}

function encode(callId: string, r: HandlerResult, bounds?: Bounds): { text: string; outcome: "ok" | Rule } {
  let text: string;
  try {
    if (r === null || typeof r !== "object" || typeof r.ok !== "boolean") throw new TypeError("not a result");
    if (r.budget !== undefined && bounds !== undefined && !budgetAgrees(r.budget, bounds)) throw new TypeError("budget");
    const init: AnswerInit = r.ok
      ? { callId, ok: true, observed: r.observed, ...(r.budget ? { budget: r.budget } : {}) }
      : { callId, ok: false, refused: r.refused, ...(r.why !== undefined ? { why: r.why } : {}), ...(r.budget ? { budget: r.budget } : {}) };
    text = encodeAnswer(init);
    if (r.ok && bounds !== undefined && utf8Length(JSON.stringify(r.observed)) > bounds.maxOutputBytes) {
      return encode(callId, refuse(OUTPUT_TOO_LARGE, undefined, r.budget), bounds);
    }
    if (utf8Length(text) > maxAnswerFrame) return encode(callId, refuse(OUTPUT_TOO_LARGE), bounds);
    return { text, outcome: r.ok ? "ok" : r.refused };
  } catch {
    return { text: encodeAnswer({ callId, ok: false, refused: EXEC_THREW, why: WHY[EXEC_THREW] }), outcome: EXEC_THREW };
  }
}

// budgetAgrees is executors/wire Bounds.BudgetAgrees: the broker treats a
// budget that contradicts the bounds as an invalid frame.
function budgetAgrees(b: Budget, bounds: Bounds): boolean {
  return b.requestsLimit === (bounds.maxRequests ?? 0) && b.requestsUsed <= b.requestsLimit;
}

function send(ws: WebSocketLike, frame: string): boolean {
  try {
    ws.send(frame);
    return true;
  } catch {
    return false;
  }
}

// normalize copies descriptors as the broker encodes them (Go's zero
// values: an absent description is "", absent maxRequests 0, absent lists
// empty lists), which is what boundsEcho echoes.
function normalize(ds: readonly Descriptor[]): Descriptor[] {
  return ds.map((d) => ({
    descriptorId: d.descriptorId,
    tools: d.tools.map((t) => ({ name: t.name, description: t.description ?? "", inputSchema: t.inputSchema })) as Descriptor["tools"],
    bounds: {
      timeoutMs: d.bounds.timeoutMs,
      memoryMiB: d.bounds.memoryMiB,
      maxOutputBytes: d.bounds.maxOutputBytes,
      maxRequests: d.bounds.maxRequests ?? 0,
      allowedHosts: [...(d.bounds.allowedHosts ?? [])],
      roots: [...(d.bounds.roots ?? [])],
    },
  }));
}

// canonical is JSON with object keys sorted, the comparison the broker
// uses for boundsEcho (executors/wire Bounds.EchoMatches).
function canonical(x: unknown): string {
  if (Array.isArray(x)) return `[${x.map(canonical).join(",")}]`;
  if (x !== null && typeof x === "object") {
    const o = x as Record<string, unknown>;
    return `{${Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`).join(",")}}`;
  }
  return JSON.stringify(x) ?? "null";
}

/** utf8Length is the number of bytes s takes in UTF-8. */
export function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) {
      if (c < 0x800) n += 1;
      else if (c >= 0xd800 && c <= 0xdbff) i++, (n += 2); // a pair: 4 bytes for 2 units
      else n += 2;
    }
  }
  return n;
}
