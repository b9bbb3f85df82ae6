// @airlock/client/host: the extension side of the local browser broker, for
// Node (PROTOCOL sections 2-4 and 12). It launches `airlock serve`, mints
// workspace sessions, and opens the session's one host socket with its
// cookie and Origin, with typed messages, hostSequence kept for ordered
// state, snapshot answering and request replies.
//
// Node only: it spawns a process and sends Cookie and Origin headers on a
// WebSocket upgrade, which browsers do not allow (RATIONALE.md, "Why does
// the Node host use the ws package?").
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import { isAbsolute } from "node:path";
import WebSocket from "ws";
import { Emitter } from "./emitter.js";
import { ViewClient, bootstrap, parseFragment } from "./view.js";
import { AirlockError, CONNECTION_CLOSED, FAMILIES, HOST_COOKIE, LAUNCH_TOKEN_ENV, MESSAGES, PROTOCOL_VERSION, TIMEOUT, TOKEN_HEADER, decodeEnvelope, encodeEnvelope, isOrderedType, } from "./messages.js";
export * from "./messages.js";
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
export async function launch(opts = {}) {
    const token = randomBytes(32).toString("base64url");
    const env = { ...process.env, ...opts.env };
    // The launch token is ours alone: its seed alias (TENSORVIZ_LOCAL_TOKEN)
    // and a token file flag are not passed on.
    delete env["TENSORVIZ_LOCAL_TOKEN"];
    env[LAUNCH_TOKEN_ENV] = token;
    const args = ["serve", "--listen", opts.listen ?? "127.0.0.1:0"];
    if (opts.socket !== undefined) {
        if (!isAbsolute(opts.socket))
            throw new TypeError("airlock host: socket must be an absolute path");
        args.push("--listen-unix", opts.socket);
    }
    args.push(...(opts.args ?? []));
    if (args.some((a) => a === "--token-file" || a.startsWith("--token-file=") || a === "-token-file" || a.startsWith("-token-file="))) {
        throw new TypeError("airlock host: launch sets the token itself; do not pass --token-file");
    }
    for (const k of Object.keys(env))
        if (env[k] === undefined)
            delete env[k];
    const child = spawn(opts.bin ?? "airlock", args, { env, stdio: ["ignore", "pipe", "pipe"] });
    const onLog = opts.onLog;
    let lastLog = "";
    lines(child.stderr, (line) => {
        lastLog = line;
        onLog?.(line);
    });
    // A spawn that fails (ENOENT) emits "error" and never "exit".
    const exited = new Promise((resolve) => {
        child.once("exit", (code, signal) => resolve(signal ? null : code));
        child.once("error", () => resolve(null));
    });
    const killOnExit = () => child.kill("SIGTERM");
    process.once("exit", killOnExit);
    exited.then(() => process.off("exit", killOnExit));
    let listening;
    try {
        listening = await firstLine(child, exited, opts.startTimeoutMs ?? 30_000);
    }
    catch (err) {
        child.kill("SIGKILL");
        await exited;
        release(child);
        // The broker's last stderr line says why (its logs never hold secrets).
        if (lastLog && err instanceof Error)
            err.message += `: ${lastLog.slice(0, 512)}`;
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
function release(child) {
    child.stdout?.destroy();
    child.stderr?.destroy();
}
/** Splits a stream into lines, each cut at MAX_LINE characters. */
function lines(stream, each) {
    let buf = "";
    stream.setEncoding("utf8");
    stream.on("data", (chunk) => {
        buf += chunk;
        let nl;
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
        if (buf)
            each(buf);
    });
}
/** Reads the listening line; rejects on early exit, a bad line or the timeout. */
function firstLine(child, exited, timeoutMs) {
    return new Promise((resolve, reject) => {
        let buf = "";
        let done = false;
        const finish = (err, v) => {
            if (done)
                return;
            done = true;
            clearTimeout(timer);
            child.stdout.off("data", onData);
            child.stdout.resume(); // keep draining whatever follows
            if (err)
                reject(err);
            else
                resolve(v);
        };
        const timer = setTimeout(() => finish(new AirlockError(TIMEOUT, { message: `airlock host: no listening line within ${timeoutMs} ms` })), timeoutMs);
        const onData = (chunk) => {
            buf += chunk;
            const nl = buf.indexOf("\n");
            if (nl < 0) {
                if (buf.length > MAX_LINE)
                    finish(new Error("airlock host: first stdout line too long"));
                return;
            }
            let v;
            try {
                v = JSON.parse(buf.slice(0, nl));
            }
            catch {
                v = undefined;
            }
            const l = v;
            if (!l || l.event !== "listening" || typeof l.addr !== "string" || !/^[0-9A-Za-z.:[\]-]+$/.test(l.addr)) {
                finish(new Error("airlock host: the first stdout line is not the listening line"));
                return;
            }
            finish(undefined, l);
        };
        child.stdout.setEncoding("utf8");
        child.stdout.on("data", onData);
        child.once("error", (err) => finish(new Error(`airlock host: cannot start the broker: ${err.message}`)));
        exited.then((code) => finish(new Error(`airlock host: the broker exited (${code ?? "signal"}) before listening`)));
    });
}
/**
 * A running broker, known by its base URL and launch token. {@link launch}
 * returns one it owns; construct one directly for a broker started
 * elsewhere. The token is kept in a private field (not enumerable, not
 * shown by `util.inspect`).
 */
export class Broker {
    /** http://127.0.0.1:PORT */
    baseUrl;
    /** The broker's own origin (its built-in view page's). */
    origin;
    /** The Unix socket this host reaches the broker over, if any. */
    socket;
    #token;
    constructor(baseUrl, token, opts = {}) {
        const u = new URL(baseUrl);
        if (u.protocol !== "http:" && u.protocol !== "https:")
            throw new TypeError("airlock host: base URL must be http(s)");
        if (opts.socket !== undefined && !isAbsolute(opts.socket))
            throw new TypeError("airlock host: socket must be an absolute path");
        this.origin = u.origin;
        this.baseUrl = u.origin;
        this.socket = opts.socket;
        this.#token = token;
    }
    /** Mints a workspace session (POST /local/sessions). Refusals reject with an {@link AirlockError} carrying `status`. */
    async mint(opts = {}) {
        const body = { launchOrigin: opts.launchOrigin ?? this.origin };
        if (opts.ttlSeconds !== undefined)
            body["ttlSeconds"] = opts.ttlSeconds;
        if (opts.canProposeSourceEdits !== undefined)
            body["canProposeSourceEdits"] = opts.canProposeSourceEdits;
        const init = {
            method: "POST",
            headers: { "Content-Type": "application/json", [TOKEN_HEADER]: this.#token },
            body: JSON.stringify(body),
            signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000),
        };
        const res = this.socket === undefined ? await fetch(`${this.baseUrl}/local/sessions`, init) : await unixFetch(this.socket, "/local/sessions", init);
        if (res.status !== 201)
            throw await httpError(res);
        const m = (await res.json());
        const viewFragment = `${m.workspaceSessionId}.${m.viewCredential}`;
        const session = { ...m, baseUrl: this.baseUrl, viewFragment, viewUrl: `${this.baseUrl}/local/view#${viewFragment}` };
        if (this.socket !== undefined)
            session.socket = this.socket;
        return session;
    }
    /** Opens the session's host socket; see {@link connectHost}. */
    connectHost(session, opts = {}) {
        return connectHost(session, opts);
    }
    /** The token is never serialized. */
    toJSON() {
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
function unixFetch(socketPath, path, init) {
    return new Promise((resolve, reject) => {
        const req = httpRequest({ socketPath, path, method: init.method, headers: { ...init.headers, Host: "localhost" }, signal: init.signal }, (res) => {
            const chunks = [];
            let size = 0;
            res.on("data", (c) => {
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
async function httpError(res) {
    let code = `HTTP_${res.status}`;
    try {
        const b = (await res.json());
        if (typeof b.error?.code === "string")
            code = b.error.code;
    }
    catch {
        // not JSON: keep the status
    }
    return new AirlockError(code, { status: res.status });
}
/** A broker this process launched and must stop. */
export class LaunchedBroker extends Broker {
    /** The broker's process id. */
    pid;
    /** The address it listens on, 127.0.0.1:PORT. */
    addr;
    /** Resolves with the exit code (null when killed by a signal). */
    exited;
    #child;
    /** @internal use {@link launch}. */
    constructor(baseUrl, token, child, exited, l) {
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
    async shutdown(opts = {}) {
        if (this.#child.exitCode === null && this.#child.signalCode === null)
            this.#child.kill("SIGTERM");
        let timer;
        const late = new Promise((resolve) => (timer = setTimeout(() => resolve("late"), opts.timeoutMs ?? 20_000)));
        const code = await Promise.race([this.exited, late]);
        clearTimeout(timer);
        if (code === "late") {
            this.#child.kill("SIGKILL");
            await this.exited;
            release(this.#child);
            throw new AirlockError(TIMEOUT, { message: "airlock host: the broker did not exit after SIGTERM; killed" });
        }
        if (code !== 0)
            throw new Error(`airlock host: the broker exited with ${code ?? "a signal"}`);
    }
}
/**
 * A request a view made, as the host sees it. Reply with {@link progress}
 * (families with a non-terminal reply: sourceEdit, graphPublish) and one
 * {@link result}; both fill in `requestId`, `target` and, for candidate,
 * `viewId`. `signal` aborts when the view cancels, the view leaves (the
 * broker's cancel carries `reason: "view-disconnected"`) or the socket
 * closes; replies after that are not sent (the broker would drop them).
 */
export class IncomingRequest {
    family;
    requestId;
    /** The request's target; absent (undefined) for candidate requests. */
    target;
    /** The requesting view, when the payload names it (candidate, and sourceEdit when given). */
    viewId;
    payload;
    #ctl = new AbortController();
    #host;
    #settled = false;
    /** @internal made by HostConnection. */
    constructor(host, family, payload) {
        this.#host = host;
        this.family = family;
        this.payload = payload;
        this.requestId = payload.requestId;
        this.target = payload.target;
        const v = payload.viewId;
        this.viewId = typeof v === "string" ? v : undefined;
    }
    /** Aborted when the request is cancelled or can no longer be answered. */
    get signal() {
        return this.#ctl.signal;
    }
    /** Whether a result was sent or the request was cancelled. */
    get settled() {
        return this.#settled;
    }
    /** Sends a non-terminal reply (sourceEditReview, graphPublishState). Returns false when not sent. */
    progress(fields) {
        const type = FAMILIES[this.family].progress;
        if (!type)
            throw new TypeError(`airlock host: ${this.family} has no progress message`);
        if (this.#settled)
            return false;
        return this.#host.sendRaw(type, { ...fields, ...this.#ids() });
    }
    /** Sends the terminal reply; the request is then settled. Returns false when not sent. */
    result(fields) {
        if (this.#settled)
            return false;
        this.#settled = true;
        this.#host.forget(this.requestId);
        return this.#host.sendRaw(FAMILIES[this.family].result, { ...fields, ...this.#ids() });
    }
    #ids() {
        const ids = { requestId: this.requestId };
        if (this.family === "candidate")
            ids["viewId"] = this.viewId;
        else
            ids["target"] = this.target;
        return ids;
    }
    /** @internal */
    abort(reason) {
        this.#settled = true;
        this.#ctl.abort(reason);
    }
}
/**
 * Opens /local/ws as the session's host: `Cookie:
 * tensorviz_local_browser=<hostCookieKey>` and `Origin: <launchOrigin>`,
 * then hello, and resolves on `connected`. A refused upgrade or handshake
 * rejects with the {@link AirlockError} of its close code (4401 ...
 * 4408), its `detail` from the broker's error frame when one came first.
 */
export function connectHost(session, opts = {}) {
    // Over the Unix socket, ws dials the path given in a ws+unix: URL, and
    // the broker asks for `Host: localhost` there.
    const url = session.socket === undefined ? `${session.baseUrl.replace(/^http/, "ws")}/local/ws` : `ws+unix://${session.socket}:/local/ws`;
    const headers = { Cookie: `${HOST_COOKIE}=${session.hostCookieKey}`, Origin: session.launchOrigin };
    if (session.socket !== undefined)
        headers["Host"] = "localhost";
    const ws = new WebSocket(url, {
        headers,
        maxPayload: opts.maxPayload ?? 64 << 20,
        perMessageDeflate: false,
        handshakeTimeout: opts.handshakeTimeoutMs ?? 10_000,
    });
    return new Promise((resolve, reject) => {
        let refusal;
        const timer = setTimeout(() => {
            ws.terminate();
            reject(new AirlockError(TIMEOUT, { message: "airlock host: no connected within the handshake bound" }));
        }, opts.handshakeTimeoutMs ?? 10_000);
        const fail = (err) => {
            clearTimeout(timer);
            ws.removeAllListeners();
            ws.on("error", () => { });
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
            if (env?.type !== "connected" || env.payload.role !== "host")
                return;
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
export class HostConnection extends Emitter {
    workspaceSessionId;
    /** The epoch this host started; ordering restarts with each. */
    hostEpoch;
    #ws;
    #views;
    #state = {};
    #requests = new Map();
    #snapshot;
    #seq = 0;
    #closed;
    /** @internal use {@link connectHost}. */
    constructor(ws, session, connected, opts) {
        super();
        this.#ws = ws;
        this.workspaceSessionId = session.workspaceSessionId;
        this.hostEpoch = connected.hostEpoch;
        this.#views = new Set(connected.views);
        this.#snapshot = opts.snapshot;
        ws.on("message", (data, isBinary) => {
            if (!isBinary)
                this.#receive(data.toString());
        });
        ws.on("error", () => { }); // the close that follows reports it
        this.#closed = new Promise((resolve) => {
            ws.once("close", (code, reason) => {
                const info = { code, reason: reason.toString() };
                const e = AirlockError.fromClose(code, info.reason);
                if (e.code !== CONNECTION_CLOSED)
                    info.error = e;
                for (const r of this.#requests.values())
                    r.abort(e);
                this.#requests.clear();
                resolve(info);
                this.emit("close", info);
            });
        });
    }
    /** The views connected now, by id (kept from `connected` and `viewState`). */
    get views() {
        return this.#views;
    }
    /** The `hostSequence` of the last ordered message sent (0 before any). */
    get hostSequence() {
        return this.#seq;
    }
    /** The last payload sent of each ordered type: the default snapshot. */
    get state() {
        return this.#state;
    }
    /** Whether the socket is open. */
    get open() {
        return this.#ws.readyState === WebSocket.OPEN;
    }
    /**
     * Bytes queued on the socket and not yet written. A host that sends
     * state faster than the network takes it can check this and skip a
     * frame: ws queues without bound.
     */
    get bufferedAmount() {
        return this.#ws.bufferedAmount;
    }
    /** Requests in flight (not yet answered, cancelled or abandoned). */
    get pending() {
        return this.#requests;
    }
    /**
     * Sends a host message. Ordered state (activeTarget, projection,
     * syncState, staleState, focusNode) is stamped with the next
     * `hostSequence` and remembered for snapshots. Returns false, sending
     * nothing, once the socket is closed.
     */
    send(type, payload) {
        return this.sendRaw(type, payload);
    }
    /**
     * Handles the requests of one family, with replies typed for it:
     * `host.handle("graphPublish", (req) => req.progress({phase: "uploading"}))`.
     * Returns a function that removes the handler.
     */
    handle(family, handler) {
        return this.on("request", (req) => {
            if (req.family === family)
                handler(req);
        });
    }
    /** Answers the oldest pending snapshot request with `state` at the current sequence. */
    sendSnapshot(state) {
        return this.sendRaw("snapshot", { atHostSequence: this.#seq, state });
    }
    /** @internal the untyped send behind send and replies. */
    sendRaw(type, payload) {
        if (!this.open)
            return false;
        if (!MESSAGES[type]?.from.includes("host"))
            throw new TypeError(`airlock host: a host cannot send ${type}`);
        let seq;
        if (isOrderedType(type)) {
            seq = this.#seq + 1;
            this.#state[type] = payload;
            this.#seq = seq;
        }
        this.#ws.send(encodeEnvelope(this.workspaceSessionId, type, payload, seq));
        return true;
    }
    /** @internal */
    forget(requestId) {
        this.#requests.delete(requestId);
    }
    /**
     * Closes the socket (1000) and resolves once it is closed, at most
     * `timeoutMs` later (default 5000; then the socket is dropped).
     */
    async close(opts = {}) {
        if (this.#ws.readyState === WebSocket.OPEN || this.#ws.readyState === WebSocket.CONNECTING)
            this.#ws.close(1000, "bye");
        let timer;
        const late = new Promise((resolve) => (timer = setTimeout(() => resolve(undefined), opts.timeoutMs ?? 5000)));
        const info = await Promise.race([this.#closed, late]);
        clearTimeout(timer);
        if (info)
            return info;
        this.#ws.terminate();
        return this.#closed;
    }
    /** Resolves when the socket has closed, for whatever reason. */
    get closed() {
        return this.#closed;
    }
    #receive(text) {
        const env = decodeEnvelope(text);
        if (!env || env.protocolVersion !== PROTOCOL_VERSION)
            return;
        this.emit("message", env);
        const spec = MESSAGES[env.type];
        switch (env.type) {
            case "viewState":
                if (env.payload.state === "connected")
                    this.#views.add(env.payload.viewId);
                else
                    this.#viewLeft(env.payload.viewId);
                break;
            case "snapshotRequest":
                this.#answerSnapshot(env.payload);
                break;
            case "error":
                {
                    const err = AirlockError.fromFrame(env.payload);
                    if (err)
                        this.emit("refusal", err);
                }
                break;
        }
        if (spec.family && spec.kind === "request") {
            const req = new IncomingRequest(this, spec.family, env.payload);
            this.#requests.set(req.requestId, req);
            this.emitTyped(env);
            this.emit("request", req);
            return;
        }
        if (spec.family && spec.kind === "cancel") {
            const p = env.payload;
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
    emitTyped(env) {
        this.emit(env.type, env.payload, env);
    }
    /**
     * A view left. The broker cancels its requests of every family that has
     * a cancel; a candidate request has none and is abandoned, so it is
     * aborted here (its requestId names the view) rather than kept forever.
     */
    #viewLeft(viewId) {
        this.#views.delete(viewId);
        for (const [id, req] of this.#requests) {
            if (req.family !== "candidate" || req.viewId !== viewId)
                continue;
            this.#requests.delete(id);
            req.abort(new AirlockError("REQUEST_CANCELLED", { requestId: id, detail: "view-disconnected" }));
        }
    }
    #answerSnapshot(req) {
        const state = this.#snapshot ? this.#snapshot(req) : { ...this.#state };
        if (state !== undefined)
            this.sendSnapshot(state);
    }
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
export async function openNodeView(viewUrl, opts = {}) {
    const u = new URL(viewUrl);
    const fragment = parseFragment(u.hash);
    if (!fragment)
        throw new TypeError("airlock host: the view URL has no #<workspaceSessionId>.<viewCredential> fragment");
    const origin = opts.origin ?? u.origin;
    const jar = new Map();
    const pageFetch = async (url, init) => {
        const res = await fetch(url, { ...init, headers: { ...init.headers, Origin: origin } });
        for (const c of res.headers.getSetCookie()) {
            const pair = c.split(";")[0] ?? "";
            const eq = pair.indexOf("=");
            if (eq > 0)
                jar.set(pair.slice(0, eq), pair.slice(eq + 1));
        }
        return res;
    };
    const info = await bootstrap(fragment, { baseUrl: u.origin, fetch: pageFetch });
    const PageSocket = class extends WebSocket {
        constructor(url, protocols) {
            const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
            super(url, protocols ?? [], { headers: { Cookie: cookie, Origin: origin }, perMessageDeflate: false });
        }
    };
    const view = new ViewClient({
        ...opts.view,
        workspaceSessionId: info.workspaceSessionId,
        viewKey: info.viewKey,
        baseUrl: u.origin,
        WebSocket: PageSocket,
    });
    if (opts.connect !== false)
        await view.connect();
    return view;
}
