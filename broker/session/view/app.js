// The built-in Airlock view page (PROTOCOL sections 3, 4 and 12), built
// on @airlock/client/view, which the broker serves from its embedded dist
// at ./client/ (RATIONALE.md, "Why is the view page plain ES modules served
// from the embedded client?").
//
// It takes "#<workspaceSessionId>.<viewCredential>" from the URL fragment
// (and clears it at once), trades it for the view cookie and the view
// key, keeps the key in sessionStorage (this origin's, port included:
// a page another process serves on another port of 127.0.0.1 is sent the
// cookie but cannot read it), and lets the ViewClient keep /local/ws up,
// offering the key on every socket: reconnect with backoff and
// lastHostSequence, stale marking, and the final states (expired, failed).
// Everything the host sends is untrusted: it reaches the page through
// textContent and DOM building only, never as HTML, and the only URLs it
// can turn into links are http and https ones, opened by the user's click.

import { AirlockError, ViewClient, bootstrap, parseFragment, takeFragment } from "./client/view.js";
import { VIEW_LIMITS, viewStateNotes } from "./client/view-state.js";
import { startTools } from "./tools.js";

const $ = (id) => document.getElementById(id);
const SESSION_KEY = "airlock.session";
const LOG_MAX = 200;

/** el builds an element with text children (strings) or element children. */
function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("data-")) e.dataset[k.slice(5)] = v;
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
}

/** set shows text in an element and, optionally, a data-state for styling and tests. */
function set(id, text, state) {
  const e = $(id);
  e.textContent = text;
  if (state !== undefined) e.dataset.state = state;
}

function announce(text) {
  $("status").textContent = text;
}

/**
 * describe renders an AirlockError (or anything thrown) as one line: code,
 * detail and, for a lost connection (withClose), the close code. A refusal
 * frame carries no close (its code's paired close code is not one).
 */
function describe(err, withClose = false) {
  if (!(err instanceof AirlockError)) return String(err && err.message ? err.message : err);
  let s = err.code;
  if (err.detail) s += ` (${err.detail})`;
  // An HTTP refusal carries the close code paired with its code too: name
  // only what actually happened.
  if (err.status) s += ` [HTTP ${err.status}]`;
  else if (withClose && err.closeCode && err.detail !== String(err.closeCode)) s += ` [close ${err.closeCode}]`;
  return s;
}

function short(v) {
  if (v === undefined) return "–";
  if (typeof v === "string") return v;
  return JSON.stringify(v);
}

/**
 * renderValue turns a reply into readable DOM: its top-level fields as a
 * definition list (two levels deep); scalars and short lists of scalars
 * inline; anything deeper as a one-line summary with its JSON in a
 * collapsed detail view.
 * Sizes are bounded so a hostile host cannot make the page build an
 * unbounded tree.
 */
function renderValue(v, depth = 0) {
  if (v === null || typeof v !== "object") return el("span", { class: "scalar", text: String(v).slice(0, 2000) });
  if (Array.isArray(v) && v.length <= 16 && v.every((x) => x === null || typeof x !== "object")) {
    return el("span", { class: "scalar", text: v.map(String).join(", ") });
  }
  if (depth > 1 || Array.isArray(v)) {
    const n = Array.isArray(v) ? `${v.length} item(s)` : `${Object.keys(v).length} field(s)`;
    const json = JSON.stringify(v, null, 2);
    return el("details", { class: "json" }, el("summary", { text: n }), el("pre", { text: json.length > 20000 ? json.slice(0, 20000) + "\n…" : json }));
  }
  const dl = el("dl", { class: "val" });
  for (const [k, x] of Object.entries(v).slice(0, 50)) dl.append(el("dt", { text: k }), el("dd", {}, renderValue(x, depth + 1)));
  return dl;
}

/** safeLink is a click-to-open link for an http(s) URL a host sent, or plain text for anything else. Never opened by the page. */
function safeLink(label, raw) {
  let u;
  try {
    u = new URL(String(raw));
  } catch {
    u = undefined;
  }
  if (!u || (u.protocol !== "http:" && u.protocol !== "https:")) {
    return el("span", { class: "refused", text: `${label}: not an http(s) URL, not linked` });
  }
  return el("a", { href: u.href, target: "_blank", rel: "noopener noreferrer", class: "ext", text: `${label}: ${u.href}` });
}

// ---------------------------------------------------------------- log

function log(kind, text) {
  const t = new Date().toISOString().slice(11, 23);
  const li = el("li", { "data-kind": kind }, el("time", { text: t }), " ", el("span", { class: "kind", text: kind }), " ", text);
  const list = $("log");
  list.prepend(li);
  while (list.children.length > LOG_MAX) list.lastChild.remove();
}

// ---------------------------------------------------------------- screens

function screen(kind, title, text, code) {
  $("main").hidden = true;
  if ($("conn").dataset.state === "idle") set("conn", "not connected", "closed");
  const s = $("screen");
  s.hidden = false;
  s.dataset.kind = kind;
  set("screen-title", title);
  set("screen-text", text);
  set("screen-code", code || "");
  document.title = `Airlock view: ${title}`;
  announce(title);
}

function showExpired(err) {
  screen(
    "expired",
    "Session expired",
    "This view's session has expired and its credentials were revoked. Nothing more will be relayed. Ask the editor extension, or airlock mint, for a new view link.",
    err ? describe(err, true) : "CREDENTIAL_EXPIRED",
  );
}

function showFailed(err) {
  const why =
    err && err.code === "INVALID_CREDENTIALS"
      ? "The broker no longer knows this view's session (it restarted, or the session was deleted after it expired). Ask for a new view link."
      : "The broker refused this view for good; it will not reconnect. Ask for a new view link.";
  screen("failed", "Disconnected for good", why, err ? describe(err, true) : "");
}

// ---------------------------------------------------------------- state

const ui = { client: undefined, info: undefined, state: {}, reconnects: 0 };

function currentTarget() {
  const t = ui.state.activeTarget;
  return t && typeof t === "object" && !Array.isArray(t) && Object.keys(t).length ? t : { view: "airlock" };
}

function renderState(state, seq) {
  ui.state = state || {};
  set("seq", seq === null || seq === undefined ? "none" : String(seq));
  const at = ui.state.activeTarget;
  set("target", at ? [at.file, at.symbol].filter((x) => typeof x === "string").join(" · ") || short(at) : "–");
  set("req-target", short(currentTarget()));
  const sync = ui.state.syncState;
  set("sync", sync ? [sync.state, sync.at].filter((x) => typeof x === "string").join(" at ") || short(sync) : "–");
  set("hoststale", ui.state.staleState ? short(ui.state.staleState) : "–");
  const focus = ui.state.focusNode && typeof ui.state.focusNode.nodeId === "string" ? ui.state.focusNode.nodeId : undefined;
  set("focus", focus ?? "–");
  renderGraph(ui.state.projection, focus);
  renderNotes(viewStateNotes(ui.state));
  $("raw-json").textContent = JSON.stringify(ui.state, null, 2);
}

/** renderNotes shows what of the host state this page cannot render (never a value the host sent). */
function renderNotes(notes) {
  const box = $("state-notes");
  box.replaceChildren(...notes.map((n) => el("li", { text: n })));
  box.hidden = !notes.length;
}

function renderGraph(proj, focus) {
  const list = $("nodes");
  const nodes = proj && Array.isArray(proj.nodes) ? proj.nodes.slice(0, VIEW_LIMITS.nodes) : [];
  const edges = proj && Array.isArray(proj.edges) ? proj.edges : [];
  set("graph-file", proj && typeof proj.file === "string" ? proj.file : "");
  const next = new Map();
  for (const e of edges.slice(0, VIEW_LIMITS.edges)) {
    if (!e || typeof e.from !== "string" || typeof e.to !== "string") continue;
    if (!next.has(e.from)) next.set(e.from, []);
    next.get(e.from).push(e.to);
  }
  const hadFocus = list.contains(document.activeElement) ? document.activeElement.dataset.node : undefined;
  list.replaceChildren();
  if (!nodes.length) {
    list.append(el("li", { class: "empty", text: "No projection from the host yet." }));
    return;
  }
  for (const n of nodes) {
    if (!n || typeof n.id !== "string") continue;
    const label = typeof n.label === "string" ? n.label : n.id;
    const b = el("button", { type: "button", class: "node", "data-node": n.id }, el("span", { class: "label", text: label }));
    if (typeof n.line === "number") b.append(el("span", { class: "line", text: `line ${n.line}` }));
    if (n.id === focus) {
      b.setAttribute("aria-current", "true");
      b.append(el("span", { class: "focus-tag", text: "focused" }));
    }
    b.addEventListener("click", () => reveal(n.id));
    const li = el("li", {}, b);
    const to = next.get(n.id);
    if (to) li.append(el("span", { class: "edge", text: `→ ${to.join(", ")}` }));
    list.append(li);
    if (hadFocus === n.id) b.focus();
  }
}

function reveal(nodeId) {
  const out = $("reveal-out");
  if (ui.client.revealNode(nodeId)) {
    out.dataset.state = "sent";
    out.textContent = `Asked the host to reveal ${nodeId}.`;
    log("request", `revealNode ${nodeId}`);
  } else {
    out.dataset.state = "error";
    out.textContent = `Not sent: the view is not connected.`;
  }
}

// ---------------------------------------------------------------- requests

/** One control per request family: its in-flight handle and where its replies show. */
class Control {
  constructor(family, start) {
    this.family = family;
    this.root = $(family);
    this.out = this.root.querySelector(".out");
    this.go = this.root.querySelector(".go");
    this.cancelBtn = this.root.querySelector(".cancel");
    this.start = start;
    this.handle = undefined;
    this.done = new Map(); // requestId -> how it ended, for late replies
    this.go.addEventListener("click", () => this.run());
    if (this.cancelBtn) this.cancelBtn.addEventListener("click", () => this.cancel());
  }

  state(s, ...lines) {
    this.root.dataset.state = s;
    this.out.replaceChildren(...lines);
  }

  add(...lines) {
    this.out.append(...lines);
  }

  async run() {
    if (this.handle || this.starting) return;
    this.starting = true;
    try {
      this.track(await this.start());
    } catch (e) {
      this.state("error", el("p", { class: "refused", text: `Not sent: ${describe(e)}` }));
    } finally {
      this.starting = false;
    }
  }

  track(h) {
    this.handle = h;
    const id = h.requestId;
    this.go.disabled = true;
    if (this.cancelBtn) this.cancelBtn.disabled = false;
    this.state("pending", el("p", { class: "progress", text: "Sent; waiting for the host…" }));
    log("request", `${this.family} ${id}`);
    h.onProgress((p) => {
      log("progress", `${this.family} ${id}`);
      this.progress(p);
    });
    h.result.then(
      (r) => {
        this.finish(id, "done");
        log("result", `${this.family} ${id}`);
        this.result(r);
      },
      (e) => {
        const cancelled = e instanceof AirlockError && e.code === "REQUEST_CANCELLED";
        this.finish(id, cancelled ? "cancelled" : "refused");
        const lost = e instanceof AirlockError && e.code === "CONNECTION_CLOSED";
        log(cancelled ? "cancelled" : lost ? "lost" : "refused", `${this.family} ${id}: ${describe(e)}`);
        if (cancelled) this.state("cancelled", el("p", { class: "note", text: "Cancelled." }));
        else if (lost)
          this.state("lost", el("p", { class: "refused", text: "The connection dropped: the broker cancelled this request on the host. Send it again once connected." }));
        else this.state("refused", el("p", { class: "refused", text: `Refused: ${describe(e)}` }));
      },
    );
  }

  finish(id, how) {
    if (this.handle && this.handle.requestId === id) this.handle = undefined;
    this.done.set(id, how);
    if (this.done.size > 64) this.done.delete(this.done.keys().next().value);
    this.go.disabled = false;
    if (this.cancelBtn) this.cancelBtn.disabled = true;
  }

  cancel() {
    if (this.handle) this.handle.cancel();
  }

  /** late shows a reply for a request this page already settled (cancelled, refused, or answered). */
  late(type, id) {
    const how = this.done.get(id);
    if (!how) return false;
    this.add(el("p", { class: "late", "data-late": type, text: `Late reply ${type} after the request was ${how}: ignored.` }));
    log("late", `${type} ${id} after ${how}`);
    return true;
  }

  progress(p) {
    this.add(el("p", { class: "progress" }, renderValue(p)));
  }

  result(r) {
    this.state("done", renderValue(stripIds(r)));
  }
}

/** stripIds drops the routing fields (requestId, target, viewId) from a reply before it is shown. */
function stripIds(p) {
  const { requestId: _r, target: _t, viewId: _v, ...rest } = p || {};
  return rest;
}

class ValidateControl extends Control {
  result(r) {
    const ok = r.valid === true;
    const lines = [el("p", { class: ok ? "ok" : "refused", "data-valid": String(ok), text: ok ? "Valid." : "Not valid." })];
    if (Array.isArray(r.diagnostics) && r.diagnostics.length) {
      const ul = el("ul", { class: "diags" });
      for (const d of r.diagnostics.slice(0, 100)) {
        ul.append(el("li", { "data-severity": String(d && d.severity) }, el("span", { class: "sev", text: String(d && d.severity) }), " ", String(d && d.message)));
      }
      lines.push(ul);
    }
    this.state("done", ...lines);
  }
}

class SourceEditControl extends Control {
  progress(p) {
    const box = el("div", { class: "review", "data-review": String(p.state || "review") }, el("p", { class: "progress", text: `Host review: ${p.state || "in review"}` }));
    if (typeof p.diff === "string") box.append(renderDiff(p.diff));
    const rest = stripIds(p);
    delete rest.diff;
    delete rest.state;
    if (Object.keys(rest).length) box.append(renderValue(rest));
    this.state("review", box);
  }

  result(r) {
    const status = String(r.status);
    const keep = [...this.out.querySelectorAll(".review")];
    this.state("done", ...keep, el("p", { class: status === "accepted" ? "ok" : "refused", "data-edit": status, text: `Edit ${status}.` }));
  }
}

function renderDiff(diff) {
  const pre = el("pre", { class: "diff", "aria-label": "Proposed change" });
  const lines = diff.replace(/\n$/, "").split("\n");
  for (const line of lines.slice(0, 400)) {
    const cls = line.startsWith("+++") || line.startsWith("---") ? "hdr" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "ctx";
    pre.append(el("span", { class: cls, text: line }), "\n");
  }
  return pre;
}

class PublishControl extends Control {
  progress(p) {
    const phase = String(p.phase);
    const lines = [el("p", { class: "progress", "data-phase": phase, text: phase === "signing_in" ? "Signing in: continue in the browser." : phase === "uploading" ? "Uploading the graph…" : `Phase: ${phase}` })];
    if (phase === "signing_in" && p.connectUrl !== undefined) lines.push(el("p", {}, safeLink("Sign in", p.connectUrl)));
    this.state("pending", ...lines);
  }

  result(r) {
    const status = String(r.status);
    const words = { published: "Published.", failed: "The host could not publish the graph.", cancelled: "The host cancelled the publish." };
    const lines = [el("p", { class: status === "published" ? "ok" : "refused", "data-publish": status, text: words[status] || `Publish ended: ${status}.` })];
    if (status === "published") {
      if (r.graphUrl !== undefined) lines.push(el("p", {}, safeLink("Graph", r.graphUrl)));
      if (r.shareUrl !== undefined) lines.push(el("p", {}, safeLink("Share", r.shareUrl)));
    }
    this.state("done", ...lines);
  }
}

class CandidateControl extends Control {
  result(r) {
    const list = Array.isArray(r.candidates) ? r.candidates.slice(0, 100) : [];
    if (!list.length) return this.state("done", el("p", { text: "No candidates." }));
    const ul = el("ul", { class: "cands" });
    for (const c of list) {
      const id = c && typeof c.nodeId === "string" ? c.nodeId : undefined;
      const li = el("li");
      if (id) {
        const b = el("button", { type: "button", class: "node small", "data-node": id, text: id });
        b.addEventListener("click", () => reveal(id));
        li.append(b);
      } else li.append(renderValue(c));
      if (c && typeof c.why === "string") li.append(" ", el("span", { class: "why", text: c.why }));
      ul.append(li);
    }
    this.state("done", el("p", { text: `${list.length} candidate(s):` }), ul);
  }
}

/** gzipBase64 is base64 of the gzip of text, as graphPublishRequest carries it. */
async function gzipBase64(text) {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"));
  const bytes = new Uint8Array(await new Response(stream).arrayBuffer());
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

function makeControls() {
  const c = () => ui.client;
  const controls = [
    new ValidateControl("validate", () => c().validate(currentTarget())),
    new Control("captureInspect", () => c().captureInspect(currentTarget())),
    new Control("export", () => c().export(currentTarget(), { format: "json" })),
    new SourceEditControl("sourceEdit", () => c().sourceEdit(currentTarget(), { viewId: c().viewId ?? "", edit: { text: $("edit-text").value } })),
    new PublishControl("graphPublish", async () => c().graphPublish(currentTarget(), await gzipBase64(JSON.stringify(ui.state.projection ?? {})))),
    new CandidateControl("candidate", () => c().candidate()),
  ];
  const byReply = new Map();
  for (const k of controls) {
    for (const t of REPLY_TYPES[k.family]) byReply.set(t, k);
  }
  return byReply;
}

const REPLY_TYPES = {
  validate: ["validateResult"],
  captureInspect: ["captureInspectResult"],
  export: ["exportResult"],
  sourceEdit: ["sourceEditReview", "sourceEditResult"],
  graphPublish: ["graphPublishState", "graphPublishResult"],
  candidate: ["candidateResult"],
};

// ---------------------------------------------------------------- connection

function showStatus(status, err) {
  const labels = {
    connecting: "connecting",
    open: "open",
    reconnecting: "reconnecting",
    expired: "expired",
    failed: "failed",
    closed: "closed",
    idle: "idle",
  };
  let text = labels[status] || status;
  if (status === "reconnecting") {
    ui.reconnects++;
    text = `reconnecting (attempt ${ui.reconnects})`;
  }
  if (status === "open") ui.reconnects = 0;
  set("conn", text, status);
  $("conn").dataset.code = err && err.closeCode ? String(err.closeCode) : "";
  if (status === "reconnecting") {
    set("host", "unknown", "unknown");
    announce(`Connection lost (${describe(err, true)}); reconnecting with backoff…`);
    log("connection", `lost: ${describe(err, true)}; retrying`);
  } else if (status === "open") {
    announce("Connected to the broker.");
    log("connection", `open as ${ui.client.viewId}`);
  } else if (status === "expired") {
    log("connection", `expired: ${describe(err, true)}`);
    showExpired(err);
  } else if (status === "failed") {
    log("connection", `failed: ${describe(err, true)}`);
    showFailed(err);
  }
}

function showHost(connected, epoch) {
  set("host", connected ? "connected" : "disconnected", connected ? "connected" : "disconnected");
  if (epoch !== undefined) set("epoch", String(epoch), "set");
}

function showStale(stale) {
  set("fresh", stale ? "stale" : "fresh", stale ? "stale" : "fresh");
  $("statepanel").dataset.stale = String(stale);
  $("stale-note").hidden = !stale;
  $("stale-badge").hidden = !stale;
}

function wire(client) {
  const byReply = makeControls();
  client.on("status", showStatus);
  client.on("stale", (stale) => {
    showStale(stale);
    if (stale) log("state", "marked stale");
    else log("state", `fresh at hostSequence ${client.lastHostSequence ?? "none"}`);
  });
  client.on("state", (state, seq) => renderState(state, seq));
  client.on("connected", (p) => {
    set("viewId", p.viewId);
    showHost(p.hostConnected, p.hostEpoch);
  });
  client.on("connectionState", (p) => {
    showHost(p.state === "connected", p.hostEpoch);
    log("host", `${p.state} (epoch ${p.hostEpoch})`);
    announce(p.state === "connected" ? `Host connected (epoch ${p.hostEpoch}).` : "The host left: the state shown is stale.");
  });
  client.on("refusal", (e) => {
    log("refused", describe(e));
    const out = $("reveal-out");
    out.dataset.state = "error";
    out.textContent = `Broker refused: ${describe(e)}`;
  });
  client.on("error", (p) => {
    if (typeof p.code !== "string") log("host-error", `the host says: ${short(p.message)}`);
  });
  client.on("ack", (p) => log("ack", short(p).slice(0, 200)));
  client.on("message", (env) => {
    const k = byReply.get(env.type);
    const id = env.payload && env.payload.requestId;
    if (k && typeof id === "string" && (!k.handle || k.handle.requestId !== id)) k.late(env.type, id);
  });
}

// ---------------------------------------------------------------- start

async function start() {
  const frag = takeFragment();
  if (frag) {
    announce("Trading the one-time link for this tab's session cookie and key…");
    try {
      const info = await bootstrap(frag);
      sessionStorage.setItem(SESSION_KEY, JSON.stringify(info));
    } catch (e) {
      if (e instanceof AirlockError && e.code === "CREDENTIAL_EXPIRED") return showExpired(e);
      if (e instanceof AirlockError && e.code === "INVALID_CREDENTIALS" && sessionStorage.getItem(SESSION_KEY)) {
        // A reload of a tab that already holds the cookie: use it.
      } else {
        return screen(
          "refused",
          "This link cannot be used",
          "The view link was already used, is wrong, or belongs to another origin. A view link works once: ask the editor extension for a new one, or press Enter in the terminal running airlock demo.",
          describe(e),
        );
      }
    }
  }
  let info;
  try {
    info = JSON.parse(sessionStorage.getItem(SESSION_KEY) || "null");
  } catch {
    info = null;
  }
  if (!info || typeof info.workspaceSessionId !== "string") {
    return screen("missing", "No session", "Open the view URL that the editor extension, airlock mint or airlock demo printed.", "");
  }
  ui.info = info;
  set("session", info.workspaceSessionId);
  set("expires", typeof info.expiresAt === "string" ? new Date(info.expiresAt).toLocaleString() : "–");
  const canEdit = !!(info.capabilities && info.capabilities.canProposeSourceEdits);
  $("edit-cap").hidden = canEdit;
  $("sourceEdit").querySelector(".go").disabled = !canEdit;
  $("sourceEdit").dataset.capable = String(canEdit);
  $("main").hidden = false;
  void startTools(info.viewKey);
  renderState({}, null);
  showStale(true);
  const client = new ViewClient({ workspaceSessionId: info.workspaceSessionId, viewKey: info.viewKey });
  ui.client = client;
  wire(client);
  try {
    await client.connect();
  } catch {
    // The final state (expired, failed) is already on screen.
  }
}

// A new view link pasted into this tab changes only the fragment, which
// does not reload the page: start again with it.
window.addEventListener("hashchange", () => {
  if (parseFragment(location.hash)) location.reload();
});

start();
