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
import { AirlockError, CloseCode, CONNECTION_CLOSED, FAMILIES, MESSAGES, PROTOCOL_VERSION, REQUEST_CANCELLED, TIMEOUT, decodeEnvelope, encodeEnvelope, isOrderedType, viewProtocols, } from "./messages.js";
export * from "./messages.js";
const OPEN = 1;
/** Reads `#<workspaceSessionId>.<viewCredential>` (leading `#` optional); undefined if it is not one. */
export function parseFragment(hash) {
    const frag = hash.startsWith("#") ? hash.slice(1) : hash;
    const dot = frag.indexOf(".");
    if (dot <= 0 || dot === frag.length - 1)
        return undefined;
    return { workspaceSessionId: frag.slice(0, dot), viewCredential: frag.slice(dot + 1) };
}
/**
 * Takes the credential from `location.hash` and removes it from the
 * address at once (history.replaceState), so it is not kept in history,
 * bookmarks or a copied URL. Undefined when the page has none.
 */
export function takeFragment() {
    const loc = globalThis.location;
    if (!loc?.hash)
        return undefined;
    const f = parseFragment(loc.hash);
    globalThis.history?.replaceState(null, "", loc.pathname + loc.search);
    return f;
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
export async function bootstrap(fragment, opts = {}) {
    const f = opts.fetch ?? globalThis.fetch;
    const res = await f(`${opts.baseUrl ?? ""}/local/bootstrap`, {
        method: "POST",
        credentials: "same-origin",
        cache: "no-store",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ workspaceSessionId: fragment.workspaceSessionId, viewCredential: fragment.viewCredential }),
    });
    let body;
    try {
        body = await res.json();
    }
    catch {
        body = undefined;
    }
    if (!res.ok) {
        const code = body?.error?.code;
        throw new AirlockError(typeof code === "string" ? code : `HTTP_${res.status}`, { status: res.status });
    }
    return body;
}
/** The reconnect policy's defaults. */
export const RECONNECT_DEFAULTS = { initialDelayMs: 250, maxDelayMs: 10_000, factor: 2, maxAttempts: Infinity };
/**
 * The delay before retry number `attempt` (0-based): the capped
 * exponential `min(max, initial * factor^attempt)`, then "equal jitter":
 * half of it fixed, half random, so views that lost the broker together do
 * not come back together, and no retry comes at once.
 */
export function backoffDelay(attempt, rc = RECONNECT_DEFAULTS, random = Math.random) {
    const d = Math.min(rc.maxDelayMs, rc.initialDelayMs * rc.factor ** attempt);
    return d / 2 + (random() * d) / 2;
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
export class ViewClient extends Emitter {
    workspaceSessionId;
    #status = "idle";
    #ws;
    #viewId;
    #hostConnected = false;
    #hostEpoch;
    #lastSeq = null;
    #state = {};
    #stale = true;
    #attempt = 0;
    #timer;
    #handshakeTimer;
    #pending = new Map();
    #url;
    #protocols;
    #WS;
    #rc;
    #random;
    #handshakeMs;
    #firstOpen;
    constructor(opts) {
        super();
        this.workspaceSessionId = opts.workspaceSessionId;
        const base = opts.baseUrl ?? globalThis.location?.origin;
        if (!base)
            throw new TypeError("airlock view: baseUrl is required outside a page");
        this.#url = `${base.replace(/^http/, "ws")}/local/ws`;
        this.#protocols = opts.viewKey ? viewProtocols(opts.viewKey) : undefined;
        const WS = opts.WebSocket ?? globalThis.WebSocket;
        if (!WS)
            throw new TypeError("airlock view: no WebSocket constructor");
        this.#WS = WS;
        this.#rc = { ...RECONNECT_DEFAULTS, ...opts.reconnect };
        this.#random = opts.random ?? Math.random;
        this.#handshakeMs = opts.handshakeTimeoutMs ?? 10_000;
    }
    get status() {
        return this.#status;
    }
    /** This socket's view id (changes with each reconnect). */
    get viewId() {
        return this.#viewId;
    }
    get hostConnected() {
        return this.#hostConnected;
    }
    get hostEpoch() {
        return this.#hostEpoch;
    }
    /** The last hostSequence seen in the current host epoch (null: none). */
    get lastHostSequence() {
        return this.#lastSeq;
    }
    /** The host's state: ordered types by name, or what the last snapshot held. */
    get state() {
        return this.#state;
    }
    /** Whether the state may be behind the host's (see the class notes). */
    get stale() {
        return this.#stale;
    }
    /**
     * Opens the socket and keeps it open. Resolves on the first `connected`;
     * rejects if the first attempt ends in a final state (expired, failed,
     * closed). Later losses are retried per the reconnect policy.
     */
    connect() {
        if (this.#status !== "idle")
            throw new Error("airlock view: connect called twice");
        return new Promise((resolve, reject) => {
            this.#firstOpen = { resolve, reject };
            this.#setStatus("connecting");
            this.#dial();
        });
    }
    /** Closes for good: no reconnect; pending requests reject with CONNECTION_CLOSED. */
    close() {
        if (this.#final())
            return;
        this.#finish("closed", new AirlockError(CONNECTION_CLOSED, { message: "airlock view: closed" }));
    }
    /** Marks the view expired (a 410 at bootstrap, say): final. */
    expire() {
        if (this.#final())
            return;
        this.#finish("expired", new AirlockError("CREDENTIAL_EXPIRED", { closeCode: CloseCode.CREDENTIAL_EXPIRED }));
    }
    /** Sends a view message; false when the socket is not open. */
    send(type, payload) {
        if (!MESSAGES[type].from.includes("view"))
            throw new TypeError(`airlock view: a view cannot send ${type}`);
        if (!this.#ws || this.#ws.readyState !== OPEN || this.#status !== "open")
            return false;
        this.#ws.send(encodeEnvelope(this.workspaceSessionId, type, payload));
        return true;
    }
    /** Asks the host to reveal a node. */
    revealNode(nodeId) {
        return this.send("revealNode", { nodeId });
    }
    /** Sends an ack to the host. */
    ack(payload = {}) {
        return this.send("ack", payload);
    }
    validate(target, extra = {}) {
        return this.#request("validate", { ...extra, target });
    }
    captureInspect(target, extra = {}) {
        return this.#request("captureInspect", { ...extra, target });
    }
    export(target, extra = {}) {
        return this.#request("export", { ...extra, target });
    }
    /** Needs a session minted with canProposeSourceEdits (else refused, detail `capability`). */
    sourceEdit(target, extra = {}) {
        return this.#request("sourceEdit", { ...extra, target });
    }
    /** `graphGzipBase64`: base64 of gzip data, at most 10 MiB decoded. */
    graphPublish(target, graphGzipBase64, extra = {}) {
        return this.#request("graphPublish", { ...extra, target, graphGzipBase64 });
    }
    /** The request names this view's own id, as the contract requires. */
    candidate(extra = {}) {
        return this.#request("candidate", { ...extra, viewId: this.#viewId ?? "" });
    }
    #request(family, fields) {
        const requestId = newRequestId();
        const target = fields["target"];
        let settle;
        const result = new Promise((resolve, reject) => {
            settle = { family, target, resolve: resolve, reject, progress: [] };
        });
        result.catch(() => { }); // a cancelled, never-awaited request is not an unhandled rejection
        const handle = {
            requestId,
            result,
            onProgress: (l) => {
                settle.progress.push(l);
                return handle;
            },
            cancel: () => {
                if (this.#pending.get(requestId) !== settle)
                    return;
                this.#pending.delete(requestId);
                const cancel = FAMILIES[family].cancel;
                if (cancel)
                    this.send(cancel, { requestId, target });
                settle.reject(new AirlockError(REQUEST_CANCELLED, { requestId }));
            },
        };
        const type = FAMILIES[family].request;
        this.#pending.set(requestId, settle);
        if (!this.send(type, { ...fields, requestId })) {
            this.#pending.delete(requestId);
            settle.reject(new AirlockError(CONNECTION_CLOSED, { requestId, message: "airlock view: not connected" }));
        }
        return handle;
    }
    // ------------------------------------------------------------ socket
    #dial() {
        const ws = this.#protocols ? new this.#WS(this.#url, this.#protocols) : new this.#WS(this.#url);
        this.#ws = ws;
        this.#handshakeTimer = setTimeout(() => {
            this.#handshakeTimer = undefined;
            ws.close(CloseCode.NORMAL, "handshake timeout");
            this.#lost(ws, new AirlockError(TIMEOUT, { message: "airlock view: no connected within the handshake bound" }));
        }, this.#handshakeMs);
        ws.onopen = () => ws.send(encodeEnvelope(this.workspaceSessionId, "hello", {}));
        ws.onmessage = (ev) => {
            if (this.#ws === ws && typeof ev.data === "string")
                this.#receive(ev.data);
        };
        ws.onerror = () => { }; // the close that follows says what happened
        ws.onclose = (ev) => {
            const err = AirlockError.fromClose(ev.code, ev.reason);
            this.#lost(ws, err);
        };
    }
    /** A socket ended: final on 4402 and the other contract refusals, else a scheduled retry. */
    #lost(ws, err) {
        if (this.#ws !== ws || this.#final())
            return;
        clearTimeout(this.#handshakeTimer);
        ws.onopen = ws.onmessage = ws.onclose = null;
        this.#ws = undefined;
        this.#rejectAll(err);
        this.#markStale(true);
        if (err.code === "CREDENTIAL_EXPIRED")
            return this.#finish("expired", err);
        if (err.code !== CONNECTION_CLOSED && err.code !== TIMEOUT)
            return this.#finish("failed", err);
        if (this.#attempt >= this.#rc.maxAttempts)
            return this.#finish("failed", err);
        const delay = backoffDelay(this.#attempt, this.#rc, this.#random);
        this.#attempt++;
        this.#setStatus("reconnecting", err);
        this.#timer = setTimeout(() => {
            this.#timer = undefined;
            this.#dial();
        }, delay);
    }
    #finish(status, err) {
        clearTimeout(this.#timer);
        clearTimeout(this.#handshakeTimer);
        const ws = this.#ws;
        this.#ws = undefined;
        if (ws) {
            ws.onopen = ws.onmessage = ws.onclose = null;
            if (ws.readyState <= OPEN)
                ws.close(CloseCode.NORMAL, "bye");
        }
        this.#rejectAll(err);
        this.#hostConnected = false;
        this.#setStatus(status, err);
        this.#firstOpen?.reject(err);
        this.#firstOpen = undefined;
    }
    #final() {
        return this.#status === "expired" || this.#status === "failed" || this.#status === "closed";
    }
    #setStatus(s, err) {
        this.#status = s;
        if (err)
            this.emit("status", s, err);
        else
            this.emit("status", s);
    }
    #rejectAll(err) {
        const all = [...this.#pending.entries()];
        this.#pending.clear();
        for (const [id, p] of all)
            p.reject(new AirlockError(err.code, { requestId: id, closeCode: err.closeCode, detail: err.detail }));
    }
    #markStale(stale) {
        if (this.#stale === stale)
            return;
        this.#stale = stale;
        this.emit("stale", stale);
    }
    /** A new host epoch: its sequence restarts, so what we hold is another host's. */
    #epoch(epoch) {
        if (this.#hostEpoch !== undefined && this.#hostEpoch !== epoch) {
            this.#lastSeq = null;
            this.#markStale(true);
        }
        this.#hostEpoch = epoch;
    }
    #askSnapshot() {
        this.send("snapshotRequest", { lastHostSequence: this.#lastSeq });
    }
    #receive(text) {
        const env = decodeEnvelope(text);
        if (!env || env.protocolVersion !== PROTOCOL_VERSION)
            return;
        this.emit("message", env);
        switch (env.type) {
            case "connected": {
                const p = env.payload;
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
                        this.#pending.delete(err.requestId);
                        pending.reject(err);
                    }
                    else
                        this.emit("refusal", err);
                }
                break;
            }
            default:
                if (isOrderedType(env.type) && typeof env.hostSequence === "number")
                    this.#ordered(env.type, env.payload, env.hostSequence);
                else
                    this.#reply(env);
        }
        this.emit(env.type, env.payload, env);
    }
    #hostState(p) {
        const was = this.#hostConnected;
        const epoch = this.#hostEpoch;
        this.#epoch(p.hostEpoch);
        this.#hostConnected = p.state === "connected";
        // A host that arrived (or a new one) gets asked; the connectionState
        // that follows `connected` repeats what `connected` said, and was asked.
        if (this.#hostConnected && (!was || epoch !== p.hostEpoch))
            this.#askSnapshot();
        else if (!this.#hostConnected)
            this.#markStale(true);
    }
    #snapshot(p) {
        this.#state = { ...p.state };
        this.#lastSeq = p.atHostSequence;
        this.emit("state", this.#state, this.#lastSeq);
        this.#markStale(false);
    }
    #ordered(type, payload, seq) {
        if (this.#lastSeq !== null && seq <= this.#lastSeq)
            return; // already in a snapshot
        this.#state = { ...this.#state, [type]: payload };
        this.#lastSeq = seq;
        this.emit("state", this.#state, seq);
    }
    #reply(env) {
        const spec = MESSAGES[env.type];
        if (!spec.family || (spec.kind !== "progress" && spec.kind !== "result"))
            return;
        const id = env.payload.requestId;
        const p = typeof id === "string" ? this.#pending.get(id) : undefined;
        if (!p || p.family !== spec.family)
            return;
        if (spec.kind === "progress") {
            for (const l of p.progress)
                l(env.payload);
            return;
        }
        this.#pending.delete(id);
        p.resolve(env.payload);
    }
}
/** A fresh requestId: "r" and 24 hex digits from the platform's CSPRNG (unguessable, so no other view can name it). */
function newRequestId() {
    const b = new Uint8Array(12);
    globalThis.crypto.getRandomValues(b);
    return "r" + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}
