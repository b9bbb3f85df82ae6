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
import { OVERLOADED, SHUTTING_DOWN, UNATTRIBUTED_CALL } from "./wire.js";
import { admit, contain, encode, normalize, readCall, refuse, } from "./executor.js";
export { observe, refuse, utf8Length } from "./executor.js";
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
export function createExecutorDoor(opts) {
    return new DoorImpl(opts);
}
class DoorImpl {
    opts;
    url;
    factory;
    maxInflight;
    base;
    cap;
    catalog;
    byId = new Map();
    ws;
    inflight = new Map();
    draining = false;
    stopped = false;
    attempt = 0;
    timer;
    resolveDone;
    done;
    constructor(opts) {
        this.opts = opts;
        this.url = String(opts.url);
        const global = globalThis.WebSocket;
        const factory = opts.WebSocket ?? (global ? (u) => new global(u) : undefined);
        if (!factory)
            throw new TypeError("createExecutorDoor: no WebSocket: pass one in options.WebSocket");
        if (typeof opts.handler !== "function")
            throw new TypeError("createExecutorDoor: handler must be a function");
        this.factory = factory;
        this.maxInflight = opts.maxInflight ?? 64;
        this.base = opts.backoffBaseMs ?? 100;
        this.cap = Math.max(this.base, opts.backoffMaxMs ?? 10000);
        this.catalog = normalize(opts.catalog);
        this.index();
        this.done = new Promise((resolve) => (this.resolveDone = resolve));
        this.connect();
    }
    get connected() {
        return this.ws?.readyState === OPEN;
    }
    setCatalog(descriptors) {
        this.catalog = normalize(descriptors);
        this.index();
        if (this.connected)
            this.sendCatalog(this.ws);
    }
    async close(graceMs = 5000) {
        if (this.stopped) {
            await this.done;
            return;
        }
        this.draining = true;
        clearTimeout(this.timer);
        if (this.inflight.size > 0 && this.connected) {
            await new Promise((resolve) => {
                const t = setTimeout(resolve, graceMs);
                this.idle = () => {
                    clearTimeout(t);
                    resolve();
                };
            });
        }
        for (const c of this.inflight.values())
            c.abort(new Error("door closed"));
        this.stop({ code: 1000, reason: "" });
        await this.done;
    }
    // idle is called when the last running call settles while draining.
    idle;
    index() {
        this.byId = new Map(this.catalog.map((d) => [d.descriptorId, d]));
    }
    emit(e) {
        try {
            this.opts.onEvent?.(e);
        }
        catch {
            // a broken listener does not break the door
        }
    }
    stop(end) {
        if (this.stopped)
            return;
        this.stopped = true;
        clearTimeout(this.timer);
        const ws = this.ws;
        this.ws = undefined;
        if (ws) {
            // Handlers stay set, as no-ops: ws (Node) throws on an error event
            // nobody listens to, which closing a socket still connecting raises.
            const ignore = () => { };
            ws.onmessage = ignore;
            ws.onclose = ignore;
            ws.onerror = ignore;
            ws.onopen = ignore;
            try {
                ws.close(end.code === 1000 ? 1000 : undefined, end.code === 1000 ? "" : undefined);
            }
            catch {
                // already closed
            }
        }
        this.emit({ type: "stopped", ...end });
        this.resolveDone(end);
    }
    connect() {
        if (this.stopped)
            return;
        let ws;
        try {
            ws = this.factory(this.url);
        }
        catch {
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
        ws.onmessage = (ev) => {
            if (this.handleFrame(ws, ev.data))
                carried = true;
        };
        ws.onerror = () => {
            // onclose follows and decides
        };
        ws.onclose = (ev) => {
            if (this.ws !== ws)
                return;
            this.ws = undefined;
            // Calls of this connection can no longer be answered: the broker
            // settles them page-closed.
            for (const c of this.inflight.values())
                c.abort(new Error("connection closed"));
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
    retry(reset) {
        if (reset)
            this.attempt = 0;
        this.attempt++;
        const window = Math.min(this.base * 2 ** Math.min(this.attempt - 1, 30), this.cap);
        const wait = Math.round(window / 2 + Math.random() * (window / 2));
        this.emit({ type: "reconnecting", attempt: this.attempt, inMs: wait });
        this.timer = setTimeout(() => this.connect(), wait);
    }
    sendCatalog(ws) {
        const frame = JSON.stringify({ type: "catalog", descriptors: this.catalog });
        if (send(ws, frame))
            this.emit({ type: "catalog", descriptors: this.catalog.length });
    }
    // handleFrame answers one frame from the broker and reports whether it
    // was a call that was run.
    handleFrame(ws, data) {
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
        if (early === undefined && this.inflight.size >= this.maxInflight)
            early = refuse(OVERLOADED);
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
    async run(ws, call, d) {
        const ctl = new AbortController();
        this.inflight.set(call.callId, ctl);
        const result = await contain(this.opts.handler, call, d, ctl.signal);
        if (this.inflight.get(call.callId) !== ctl)
            return; // the connection is gone
        this.inflight.delete(call.callId);
        this.answer(ws, call.callId, result, d.bounds);
        if (this.draining && this.inflight.size === 0)
            this.idle?.();
    }
    // answer encodes and sends an answer to callId, held to bounds when
    // given (executor.ts encode).
    answer(ws, callId, r, bounds) {
        const frame = encode(callId, r, bounds);
        if (ws.readyState !== OPEN || !send(ws, frame.text))
            return;
        this.emit({ type: "answered", callId, outcome: frame.outcome });
    }
}
function send(ws, frame) {
    try {
        ws.send(frame);
        return true;
    }
    catch {
        return false;
    }
}
