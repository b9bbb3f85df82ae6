// @airlock/client/host: the extension side of the local browser broker, for
// Node (PROTOCOL sections 2-4 and 12). It launches `airlock serve`, mints
// workspace sessions, and opens the session's one host socket with its
// cookie and Origin, with typed messages, hostSequence kept for ordered
// state, snapshot answering and request replies.
//
// Node only: it spawns a process and sends Cookie and Origin headers on a
// WebSocket upgrade, which browsers do not allow (RATIONALE.md, "Why does
// the Node host use the ws package?").

import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import { isAbsolute } from "node:path";
import WebSocket from "ws";

import { Emitter } from "./emitter.js";
import { ViewClient, bootstrap, parseFragment, type FetchLike, type ViewOptions, type WebSocketConstructor } from "./view.js";
import {
  AirlockError,
  CONNECTION_CLOSED,
  FAMILIES,
  HOST_COOKIE,
  LAUNCH_TOKEN_ENV,
  MESSAGES,
  PROTOCOL_VERSION,
  TIMEOUT,
  TOKEN_HEADER,
  decodeEnvelope,
  encodeEnvelope,
  isOrderedType,
  type AnyEnvelope,
  type CancelPayload,
  type Envelope,
  type Family,
  type FamilyTypes,
  type HostConnectedPayload,
  type HostReceiveType,
  type HostSendType,
  type JsonObject,
  type MessageMap,
  type MintResponse,
  type OrderedType,
  type SnapshotRequestPayload,
  type Target,
} from "./messages.js";

export * from "./messages.js";

// ---------------------------------------------------------------- launch

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

/** Longest first stdout line accepted, and longest stderr line passed on whole. */
const MAX_LINE = 64 << 10;

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
export async function launch(opts: LaunchOptions = {}): Promise<LaunchedBroker> {
  const token = randomBytes(32).toString("base64url");
  const env: Record<string, string | undefined> = { ...process.env, ...opts.env };
  // The launch token is ours alone: its seed alias (TENSORVIZ_LOCAL_TOKEN)
  // and a token file flag are not passed on.
  delete env["TENSORVIZ_LOCAL_TOKEN"];
  env[LAUNCH_TOKEN_ENV] = token;
  const args = ["serve", "--listen", opts.listen ?? "127.0.0.1:0"];
  if (opts.socket !== undefined) {
    if (!isAbsolute(opts.socket)) throw new TypeError("airlock host: socket must be an absolute path");
    args.push("--listen-unix", opts.socket);
  }
  args.push(...(opts.args ?? []));
  if (args.some((a) => a === "--token-file" || a.startsWith("--token-file=") || a === "-token-file" || a.startsWith("-token-file="))) {
    throw new TypeError("airlock host: launch sets the token itself; do not pass --token-file");
  }
  for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
  const child = spawn(opts.bin ?? "airlock", args, { env, stdio: ["ignore", "pipe", "pipe"] });
  const onLog = opts.onLog;
  let lastLog = "";
  lines(child.stderr!, (line) => {
    lastLog = line;
    onLog?.(line);
  });
  // A spawn that fails (ENOENT) emits "error" and never "exit".
  const exited = new Promise<number | null>((resolve) => {
    child.once("exit", (code, signal) => resolve(signal ? null : code));
    child.once("error", () => resolve(null));
  });
  const killOnExit = () => child.kill("SIGTERM");
  process.once("exit", killOnExit);
  exited.then(() => process.off("exit", killOnExit));
  let listening: ListeningLine;
  try {
    listening = await firstLine(child, exited, opts.startTimeoutMs ?? 30_000);
  } catch (err) {
    child.kill("SIGKILL");
    await exited;
    release(child);
    // The broker's last stderr line says why (its logs never hold secrets).
    if (lastLog && err instanceof Error) err.message += `: ${lastLog.slice(0, 512)}`;
    throw err;
  }
  if (opts.socket !== undefined && listening.socket !== opts.socket) {
    child.kill("SIGKILL");
    await exited;
    release(child);
    throw new Error("airlock host: the listening line does not name the socket asked for");
  }
  return new LaunchedBroker(`http://${listening.addr}`, token, child, exited, listening);
}

/** Drops the pipes of an exited broker, which a stray grandchild could hold open (and with them this event loop). */
function release(child: ChildProcess): void {
  child.stdout?.destroy();
  child.stderr?.destroy();
}

/** Splits a stream into lines, each cut at MAX_LINE characters. */
function lines(stream: NodeJS.ReadableStream, each: (line: string) => void): void {
  let buf = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      each(buf.slice(0, Math.min(nl, MAX_LINE)));
      buf = buf.slice(nl + 1);
    }
    if (buf.length > MAX_LINE) {
      each(buf.slice(0, MAX_LINE));
      buf = "";
    }
  });
  stream.on("end", () => {
    if (buf) each(buf);
  });
}

/** Reads the listening line; rejects on early exit, a bad line or the timeout. */
function firstLine(child: ChildProcess, exited: Promise<number | null>, timeoutMs: number): Promise<ListeningLine> {
  return new Promise((resolve, reject) => {
    let buf = "";
    let done = false;
    const finish = (err: Error | undefined, v?: ListeningLine) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      child.stdout!.off("data", onData);
      child.stdout!.resume(); // keep draining whatever follows
      if (err) reject(err);
      else resolve(v!);
    };
    const timer = setTimeout(() => finish(new AirlockError(TIMEOUT, { message: `airlock host: no listening line within ${timeoutMs} ms` })), timeoutMs);
    const onData = (chunk: string) => {
      buf += chunk;
      const nl = buf.indexOf("\n");
      if (nl < 0) {
        if (buf.length > MAX_LINE) finish(new Error("airlock host: first stdout line too long"));
        return;
      }
      let v: unknown;
      try {
        v = JSON.parse(buf.slice(0, nl));
      } catch {
        v = undefined;
      }
      const l = v as Partial<ListeningLine> | undefined;
      if (!l || l.event !== "listening" || typeof l.addr !== "string" || !/^[0-9A-Za-z.:[\]-]+$/.test(l.addr)) {
        finish(new Error("airlock host: the first stdout line is not the listening line"));
        return;
      }
      finish(undefined, l as ListeningLine);
    };
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", onData);
    child.once("error", (err) => finish(new Error(`airlock host: cannot start the broker: ${err.message}`)));
    exited.then((code) => finish(new Error(`airlock host: the broker exited (${code ?? "signal"}) before listening`)));
  });
}

// ---------------------------------------------------------------- broker

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
export class Broker {
  /** http://127.0.0.1:PORT */
  readonly baseUrl: string;
  /** The broker's own origin (its built-in view page's). */
  readonly origin: string;
  /** The Unix socket this host reaches the broker over, if any. */
  readonly socket: string | undefined;
  readonly #token: string;

  constructor(baseUrl: string, token: string, opts: BrokerOptions = {}) {
    const u = new URL(baseUrl);
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new TypeError("airlock host: base URL must be http(s)");
    if (opts.socket !== undefined && !isAbsolute(opts.socket)) throw new TypeError("airlock host: socket must be an absolute path");
    this.origin = u.origin;
    this.baseUrl = u.origin;
    this.socket = opts.socket;
    this.#token = token;
  }

  /** Mints a workspace session (POST /local/sessions). Refusals reject with an {@link AirlockError} carrying `status`. */
  async mint(opts: MintOptions = {}): Promise<Session> {
    const body: Record<string, unknown> = { launchOrigin: opts.launchOrigin ?? this.origin };
    if (opts.ttlSeconds !== undefined) body["ttlSeconds"] = opts.ttlSeconds;
    if (opts.canProposeSourceEdits !== undefined) body["canProposeSourceEdits"] = opts.canProposeSourceEdits;
    const init = {
      method: "POST",
      headers: { "Content-Type": "application/json", [TOKEN_HEADER]: this.#token },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000),
    };
    const res = this.socket === undefined ? await fetch(`${this.baseUrl}/local/sessions`, init) : await unixFetch(this.socket, "/local/sessions", init);
    if (res.status !== 201) throw await httpError(res);
    const m = (await res.json()) as MintResponse;
    const viewFragment = `${m.workspaceSessionId}.${m.viewCredential}`;
    const session: Session = { ...m, baseUrl: this.baseUrl, viewFragment, viewUrl: `${this.baseUrl}/local/view#${viewFragment}` };
    if (this.socket !== undefined) session.socket = this.socket;
    return session;
  }

  /** Opens the session's host socket; see {@link connectHost}. */
  connectHost(session: Session, opts: HostOptions = {}): Promise<HostConnection> {
    return connectHost(session, opts);
  }

  /** The token is never serialized. */
  toJSON(): { baseUrl: string; socket?: string } {
    return this.socket === undefined ? { baseUrl: this.baseUrl } : { baseUrl: this.baseUrl, socket: this.socket };
  }
}

/** The largest response body read over the Unix socket (a mint answer is under 1 KiB). */
const MAX_UNIX_BODY = 1 << 20;

/**
 * One request over the broker's Unix socket, answered as a fetch Response.
 * Node's fetch cannot dial a socket path without the undici package, and
 * node:http can; `Host: localhost` is the name the broker asks for there.
 */
function unixFetch(socketPath: string, path: string, init: { method: string; headers: Record<string, string>; body: string; signal: AbortSignal }): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ socketPath, path, method: init.method, headers: { ...init.headers, Host: "localhost" }, signal: init.signal }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (c: Buffer) => {
        size += c.length;
        if (size > MAX_UNIX_BODY) {
          res.destroy();
          reject(new Error("airlock host: answer over the socket too large"));
          return;
        }
        chunks.push(c);
      });
      res.on("end", () => resolve(new Response(Buffer.concat(chunks), { status: res.statusCode ?? 0 })));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(init.body);
  });
}

/** A refusal body `{"error":{"code":...}}` as an AirlockError; the broker's message is static. */
async function httpError(res: Response): Promise<AirlockError> {
  let code = `HTTP_${res.status}`;
  try {
    const b = (await res.json()) as { error?: { code?: unknown } };
    if (typeof b.error?.code === "string") code = b.error.code;
  } catch {
    // not JSON: keep the status
  }
  return new AirlockError(code, { status: res.status });
}

/** A broker this process launched and must stop. */
export class LaunchedBroker extends Broker {
  /** The broker's process id. */
  readonly pid: number;
  /** The address it listens on, 127.0.0.1:PORT. */
  readonly addr: string;
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
  readonly #child: ChildProcess;

  /** @internal use {@link launch}. */
  constructor(baseUrl: string, token: string, child: ChildProcess, exited: Promise<number | null>, l: ListeningLine) {
    super(baseUrl, token, l.socket === undefined ? {} : { socket: l.socket });
    this.#child = child;
    this.exited = exited;
    this.pid = l.pid;
    this.addr = l.addr;
  }

  /**
   * Stops the broker: SIGTERM (it drains and closes every socket), then
   * waits for its exit, at most `timeoutMs` (default 20000; the broker's
   * own grace is 10 s). Past the bound it is killed and this rejects.
   * Resolves with exit code 0; any other exit rejects.
   */
  async shutdown(opts: { timeoutMs?: number } = {}): Promise<void> {
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill("SIGTERM");
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), opts.timeoutMs ?? 20_000)));
    const code = await Promise.race([this.exited, late]);
    clearTimeout(timer);
    if (code === "late") {
      this.#child.kill("SIGKILL");
      await this.exited;
      release(this.#child);
      throw new AirlockError(TIMEOUT, { message: "airlock host: the broker did not exit after SIGTERM; killed" });
    }
    if (code !== 0) throw new Error(`airlock host: the broker exited with ${code ?? "a signal"}`);
  }
}

// ---------------------------------------------------------------- host socket

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
export class IncomingRequest<F extends Family = Family> {
  readonly family: F;
  readonly requestId: string;
  /** The request's target; absent (undefined) for candidate requests. */
  readonly target: Target | undefined;
  /** The requesting view, when the payload names it (candidate, and sourceEdit when given). */
  readonly viewId: string | undefined;
  readonly payload: FamilyTypes[F]["request"];
  readonly #ctl = new AbortController();
  readonly #host: HostConnection;
  #settled = false;

  /** @internal made by HostConnection. */
  constructor(host: HostConnection, family: F, payload: FamilyTypes[F]["request"]) {
    this.#host = host;
    this.family = family;
    this.payload = payload;
    this.requestId = payload.requestId;
    this.target = (payload as { target?: Target }).target;
    const v = (payload as { viewId?: unknown }).viewId;
    this.viewId = typeof v === "string" ? v : undefined;
  }

  /** Aborted when the request is cancelled or can no longer be answered. */
  get signal(): AbortSignal {
    return this.#ctl.signal;
  }

  /** Whether a result was sent or the request was cancelled. */
  get settled(): boolean {
    return this.#settled;
  }

  /** Sends a non-terminal reply (sourceEditReview, graphPublishState). Returns false when not sent. */
  progress(fields: ProgressOf<F>): boolean {
    const type = FAMILIES[this.family].progress;
    if (!type) throw new TypeError(`airlock host: ${this.family} has no progress message`);
    if (this.#settled) return false;
    return this.#host.sendRaw(type, { ...(fields as JsonObject), ...this.#ids() });
  }

  /** Sends the terminal reply; the request is then settled. Returns false when not sent. */
  result(fields: ResultOf<F>): boolean {
    if (this.#settled) return false;
    this.#settled = true;
    this.#host.forget(this.requestId);
    return this.#host.sendRaw(FAMILIES[this.family].result, { ...(fields as JsonObject), ...this.#ids() });
  }

  #ids(): JsonObject {
    const ids: JsonObject = { requestId: this.requestId };
    if (this.family === "candidate") ids["viewId"] = this.viewId;
    else ids["target"] = this.target;
    return ids;
  }

  /** @internal */
  abort(reason: unknown): void {
    this.#settled = true;
    this.#ctl.abort(reason);
  }
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
export function connectHost(session: Session, opts: HostOptions = {}): Promise<HostConnection> {
  // Over the Unix socket, ws dials the path given in a ws+unix: URL, and
  // the broker asks for `Host: localhost` there.
  const url = session.socket === undefined ? `${session.baseUrl.replace(/^http/, "ws")}/local/ws` : `ws+unix://${session.socket}:/local/ws`;
  const headers: Record<string, string> = { Cookie: `${HOST_COOKIE}=${session.hostCookieKey}`, Origin: session.launchOrigin };
  if (session.socket !== undefined) headers["Host"] = "localhost";
  const ws = new WebSocket(url, {
    headers,
    maxPayload: opts.maxPayload ?? 64 << 20,
    perMessageDeflate: false,
    handshakeTimeout: opts.handshakeTimeoutMs ?? 10_000,
  });
  return new Promise((resolve, reject) => {
    let refusal: AirlockError | undefined;
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new AirlockError(TIMEOUT, { message: "airlock host: no connected within the handshake bound" }));
    }, opts.handshakeTimeoutMs ?? 10_000);
    const fail = (err: AirlockError) => {
      clearTimeout(timer);
      ws.removeAllListeners();
      ws.on("error", () => {});
      reject(err);
    };
    ws.on("open", () => ws.send(encodeEnvelope(session.workspaceSessionId, "hello", {})));
    ws.on("error", (err) => {
      ws.terminate();
      fail(new AirlockError(CONNECTION_CLOSED, { message: `airlock host: socket error: ${err.message}` }));
    });
    ws.on("close", (code, reason) => {
      const e = AirlockError.fromClose(code, reason.toString());
      const detail = refusal?.detail ?? e.detail;
      fail(new AirlockError(e.code, { closeCode: code, detail }));
    });
    ws.on("message", (data, isBinary) => {
      const env = isBinary ? undefined : decodeEnvelope(data.toString());
      if (env?.type === "error") {
        refusal = AirlockError.fromFrame(env.payload);
        return;
      }
      if (env?.type !== "connected" || env.payload.role !== "host") return;
      clearTimeout(timer);
      ws.removeAllListeners();
      resolve(new HostConnection(ws, session, env.payload, opts));
    });
  });
}

/**
 * The session's host socket after the handshake. Send host messages with
 * {@link send} (ordered state gets the next `hostSequence` itself),
 * listen with `on(type, ...)`, answer requests through the `request`
 * event. Snapshot requests are answered automatically (see
 * {@link HostOptions.snapshot}).
 */
export class HostConnection extends Emitter<HostEvents> {
  readonly workspaceSessionId: string;
  /** The epoch this host started; ordering restarts with each. */
  readonly hostEpoch: number;
  readonly #ws: WebSocket;
  readonly #views: Set<string>;
  readonly #state: Partial<Record<OrderedType, JsonObject>> = {};
  readonly #requests = new Map<string, IncomingRequest>();
  readonly #snapshot: HostOptions["snapshot"];
  #seq = 0;
  #closed: Promise<CloseInfo>;

  /** @internal use {@link connectHost}. */
  constructor(ws: WebSocket, session: Session, connected: HostConnectedPayload, opts: HostOptions) {
    super();
    this.#ws = ws;
    this.workspaceSessionId = session.workspaceSessionId;
    this.hostEpoch = connected.hostEpoch;
    this.#views = new Set(connected.views);
    this.#snapshot = opts.snapshot;
    ws.on("message", (data, isBinary) => {
      if (!isBinary) this.#receive(data.toString());
    });
    ws.on("error", () => {}); // the close that follows reports it
    this.#closed = new Promise((resolve) => {
      ws.once("close", (code, reason) => {
        const info: CloseInfo = { code, reason: reason.toString() };
        const e = AirlockError.fromClose(code, info.reason);
        if (e.code !== CONNECTION_CLOSED) info.error = e;
        for (const r of this.#requests.values()) r.abort(e);
        this.#requests.clear();
        resolve(info);
        this.emit("close", info);
      });
    });
  }

  /** The views connected now, by id (kept from `connected` and `viewState`). */
  get views(): ReadonlySet<string> {
    return this.#views;
  }

  /** The `hostSequence` of the last ordered message sent (0 before any). */
  get hostSequence(): number {
    return this.#seq;
  }

  /** The last payload sent of each ordered type: the default snapshot. */
  get state(): Readonly<Partial<Record<OrderedType, JsonObject>>> {
    return this.#state;
  }

  /** Whether the socket is open. */
  get open(): boolean {
    return this.#ws.readyState === WebSocket.OPEN;
  }

  /**
   * Bytes queued on the socket and not yet written. A host that sends
   * state faster than the network takes it can check this and skip a
   * frame: ws queues without bound.
   */
  get bufferedAmount(): number {
    return this.#ws.bufferedAmount;
  }

  /** Requests in flight (not yet answered, cancelled or abandoned). */
  get pending(): ReadonlyMap<string, IncomingRequest> {
    return this.#requests;
  }

  /**
   * Sends a host message. Ordered state (activeTarget, projection,
   * syncState, staleState, focusNode) is stamped with the next
   * `hostSequence` and remembered for snapshots. Returns false, sending
   * nothing, once the socket is closed.
   */
  send<T extends HostSendType>(type: T, payload: MessageMap[T]): boolean {
    return this.sendRaw(type, payload as JsonObject);
  }

  /**
   * Handles the requests of one family, with replies typed for it:
   * `host.handle("graphPublish", (req) => req.progress({phase: "uploading"}))`.
   * Returns a function that removes the handler.
   */
  handle<F extends Family>(family: F, handler: (request: IncomingRequest<F>) => void): () => void {
    return this.on("request", (req) => {
      if (req.family === family) handler(req as unknown as IncomingRequest<F>);
    });
  }

  /** Answers the oldest pending snapshot request with `state` at the current sequence. */
  sendSnapshot(state: JsonObject): boolean {
    return this.sendRaw("snapshot", { atHostSequence: this.#seq, state });
  }

  /** @internal the untyped send behind send and replies. */
  sendRaw(type: string, payload: JsonObject): boolean {
    if (!this.open) return false;
    if (!MESSAGES[type as HostSendType]?.from.includes("host")) throw new TypeError(`airlock host: a host cannot send ${type}`);
    let seq: number | undefined;
    if (isOrderedType(type)) {
      seq = this.#seq + 1;
      this.#state[type] = payload;
      this.#seq = seq;
    }
    this.#ws.send(encodeEnvelope(this.workspaceSessionId, type as HostSendType, payload as never, seq));
    return true;
  }

  /** @internal */
  forget(requestId: string): void {
    this.#requests.delete(requestId);
  }

  /**
   * Closes the socket (1000) and resolves once it is closed, at most
   * `timeoutMs` later (default 5000; then the socket is dropped).
   */
  async close(opts: { timeoutMs?: number } = {}): Promise<CloseInfo> {
    if (this.#ws.readyState === WebSocket.OPEN || this.#ws.readyState === WebSocket.CONNECTING) this.#ws.close(1000, "bye");
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), opts.timeoutMs ?? 5000)));
    const info = await Promise.race([this.#closed, late]);
    clearTimeout(timer);
    if (info) return info;
    this.#ws.terminate();
    return this.#closed;
  }

  /** Resolves when the socket has closed, for whatever reason. */
  get closed(): Promise<CloseInfo> {
    return this.#closed;
  }

  #receive(text: string): void {
    const env = decodeEnvelope(text);
    if (!env || env.protocolVersion !== PROTOCOL_VERSION) return;
    this.emit("message", env);
    const spec = MESSAGES[env.type];
    switch (env.type) {
      case "viewState":
        if (env.payload.state === "connected") this.#views.add(env.payload.viewId);
        else this.#viewLeft(env.payload.viewId);
        break;
      case "snapshotRequest":
        this.#answerSnapshot(env.payload);
        break;
      case "error":
        {
          const err = AirlockError.fromFrame(env.payload);
          if (err) this.emit("refusal", err);
        }
        break;
    }
    if (spec.family && spec.kind === "request") {
      const req = new IncomingRequest(this, spec.family, env.payload as FamilyTypes[Family]["request"]);
      this.#requests.set(req.requestId, req);
      this.emitTyped(env);
      this.emit("request", req);
      return;
    }
    if (spec.family && spec.kind === "cancel") {
      const p = env.payload as CancelPayload;
      const req = this.#requests.get(p.requestId);
      this.emitTyped(env);
      if (req) {
        this.#requests.delete(p.requestId);
        req.abort(new AirlockError("REQUEST_CANCELLED", { requestId: p.requestId, detail: typeof p.reason === "string" ? p.reason : undefined }));
        this.emit("cancel", req, p);
      }
      return;
    }
    this.emitTyped(env);
  }

  private emitTyped(env: AnyEnvelope): void {
    (this.emit as (e: string, p: unknown, env: unknown) => void)(env.type, env.payload, env);
  }

  /**
   * A view left. The broker cancels its requests of every family that has
   * a cancel; a candidate request has none and is abandoned, so it is
   * aborted here (its requestId names the view) rather than kept forever.
   */
  #viewLeft(viewId: string): void {
    this.#views.delete(viewId);
    for (const [id, req] of this.#requests) {
      if (req.family !== "candidate" || req.viewId !== viewId) continue;
      this.#requests.delete(id);
      req.abort(new AirlockError("REQUEST_CANCELLED", { requestId: id, detail: "view-disconnected" }));
    }
  }

  #answerSnapshot(req: SnapshotRequestPayload): void {
    const state = this.#snapshot ? this.#snapshot(req) : { ...this.#state };
    if (state !== undefined) this.sendSnapshot(state);
  }
}

// ---------------------------------------------------------------- a view from Node

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
export async function openNodeView(viewUrl: string, opts: NodeViewOptions = {}): Promise<ViewClient> {
  const u = new URL(viewUrl);
  const fragment = parseFragment(u.hash);
  if (!fragment) throw new TypeError("airlock host: the view URL has no #<workspaceSessionId>.<viewCredential> fragment");
  const origin = opts.origin ?? u.origin;
  const jar = new Map<string, string>();
  const pageFetch: FetchLike = async (url, init) => {
    const res = await fetch(url, { ...init, headers: { ...(init.headers as Record<string, string>), Origin: origin } });
    for (const c of res.headers.getSetCookie()) {
      const pair = c.split(";")[0] ?? "";
      const eq = pair.indexOf("=");
      if (eq > 0) jar.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    return res;
  };
  const info = await bootstrap(fragment, { baseUrl: u.origin, fetch: pageFetch });
  const PageSocket = class extends WebSocket {
    constructor(url: string, protocols?: string[]) {
      const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
      super(url, protocols ?? [], { headers: { Cookie: cookie, Origin: origin }, perMessageDeflate: false });
    }
  };
  const view = new ViewClient({
    ...opts.view,
    workspaceSessionId: info.workspaceSessionId,
    viewKey: info.viewKey,
    baseUrl: u.origin,
    WebSocket: PageSocket as unknown as WebSocketConstructor,
  });
  if (opts.connect !== false) await view.connect();
  return view;
}
