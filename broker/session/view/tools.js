// Tools in the page: the view page as the page executor (PROTOCOL section
// 6.1), built on @airlock/client's door, which validates every call and
// answer with wire and contains whatever a tool does wrong.
//
// The page offers the descriptor page-notes (read_notes, list_notes,
// search_notes) over notes the user gave it: files picked with the file
// input (kept in memory for this tab) and files stored in the origin's
// private file system (OPFS), which persist across reloads. While the
// user has granted it a folder, it offers page-folder too (list_files,
// read_file), read-only over that folder, the root "handle" (folder.js).
// What it stores is sealed (AES-GCM, name and text together, under a random file
// name) with the broker's view storage key, which the page asks the live
// broker for with its view key and holds only as a non-extractable
// CryptoKey in memory: whoever serves a page on this origin once the
// broker is stopped (any local user can bind its port) reads ciphertext
// only (PROTOCOL section 3.1). The granted folder is the user's own: it
// is read, never written or sealed. The page reads nothing else: no other
// path on disk, no other site's storage (RATIONALE.md,
// "Why are the page's tools page-notes over picked and OPFS files?").
//
// The door connects to /local/channel on this page's own origin; the
// browser sends the view cookie, whose path covers /local, and the page
// offers the view key bootstrap returned (Sec-WebSocket-Protocol). The
// broker admits a page only on its own loopback origin with the cookie of
// a session minted for that origin and that session's view key: anything
// else is closed 1008 executor-unauthenticated, shown here, and the door
// does not retry. A
// second page that serves replaces this one (1000 page-replaced): this
// page says so and stays off until the user turns it on again.

import { createExecutorDoor, observe, refuse } from "./client/door.js";
import { viewProtocols } from "./client/messages.js";
import { EXEC_THREW } from "./client/wire.js";
import * as folder from "./folder.js";

const $ = (id) => document.getElementById(id);

/** The descriptor id: not "notes", which the bundled plugin holds; the
 * broker drops a page's entry that collides with a local plugin. */
export const DESCRIPTOR_ID = "page-notes";

// Bounds the door enforces (timeoutMs: exec-timeout; maxOutputBytes:
// output-too-large) and the broker holds answers to. memoryMiB is
// required by the contract; a page cannot bound its own heap, so it is
// nominal here.
const BOUNDS = { timeoutMs: 5000, memoryMiB: 16, maxOutputBytes: 262144, maxRequests: 0, allowedHosts: [], roots: [] };

const NOTES = [
  {
    descriptorId: DESCRIPTOR_ID,
    tools: [
      {
        name: "read_notes",
        description: "Read one note the user gave this browser page (its path as list_notes names it)",
        inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"], additionalProperties: false },
      },
      {
        name: "list_notes",
        description: "List the notes the user gave this browser page",
        inputSchema: { type: "object", properties: {}, additionalProperties: false },
      },
      {
        name: "search_notes",
        description: "Find the lines of the page's notes that contain a query (case-insensitive)",
        inputSchema: { type: "object", properties: { query: { type: "string" } }, required: ["query"], additionalProperties: false },
      },
    ],
    bounds: BOUNDS,
  },
];

/** catalog is what the page declares: page-notes, and page-folder while
 * a folder is granted and readable (the root "handle", its own). */
function catalog() {
  if (!folder.folderName()) return NOTES;
  return [...NOTES, { descriptorId: folder.FOLDER_DESCRIPTOR_ID, tools: folder.FOLDER_TOOLS, bounds: { ...BOUNDS, roots: [folder.HANDLE_ROOT] } }];
}

// Resource bounds of the page itself.
const MAX_NOTE_BYTES = 1 << 20; // a note larger than this is not taken
const MAX_NOTES = 500;
const MAX_MATCHES = 200;
const MAX_CALLS_SHOWN = 100;
const MAX_WHY_BYTES = 1024; // executors/wire MaxWhyBytes
const OPFS_DIR = "airlock-notes-sealed"; // sealed notes only; nothing else is read
const IV_BYTES = 12;
const MAX_SEALED_BYTES = 6 * MAX_NOTE_BYTES + 4096; // a note's JSON, escaped at worst, sealed

/** notes: path → { text, source: "picked" | "stored", file (stored: its
 * OPFS name) }. Stored wins over a picked file of the same name (it is
 * what survives a reload). */
const picked = new Map();
const stored = new Map();

function notes() {
  const all = new Map(picked);
  for (const [k, v] of stored) all.set(k, v);
  return all;
}

// ---------------------------------------------------------------- tools

/**
 * toolError answers a tool's own error as PROTOCOL section 8 says for
 * reactor-style tools: exec-threw with why "tool error: <message>", the
 * message cleaned of control and bidirectional characters and cut to
 * 1,024 bytes (executors/wire ToolErrorWhy; the broker cleans it again).
 */
export function toolError(message) {
  // eslint-disable-next-line no-control-regex
  let clean = String(message).replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069\u2028\u2029]/g, "");
  const enc = new TextEncoder();
  while (enc.encode(clean).length > MAX_WHY_BYTES) clean = clean.slice(0, Math.floor(clean.length * 0.9));
  return refuse(EXEC_THREW, clean ? "tool error: " + clean : undefined);
}

function listNotes() {
  const out = [];
  for (const [path, n] of notes()) out.push({ path, source: n.source, bytes: new TextEncoder().encode(n.text).length });
  out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return observe({ notes: out });
}

function readNote(path) {
  const n = notes().get(path);
  if (!n) return toolError(`no note named ${JSON.stringify(path.slice(0, 200))} in this page (list_notes names the notes it offers)`);
  return observe({ path, text: n.text });
}

function searchNotes(query) {
  const q = query.trim().toLowerCase();
  if (!q) return toolError("the query is empty");
  const matches = [];
  for (const [path, n] of notes()) {
    const lines = n.text.split(/\r?\n/);
    for (let i = 0; i < lines.length && matches.length < MAX_MATCHES; i++) {
      if (lines[i].toLowerCase().includes(q)) matches.push({ path, line: i + 1, text: lines[i].slice(0, 500) });
    }
  }
  return observe({ query, matches, truncated: matches.length >= MAX_MATCHES });
}

/** handle runs one call (already validated by the door: descriptor,
 * bounds echo, tool name; the broker checked args against inputSchema). */
async function handle(call) {
  if (call.descriptorId === folder.FOLDER_DESCRIPTOR_ID) return folder.folderCall(call, toolError);
  const a = call.args;
  switch (call.tool) {
    case "list_notes":
      return listNotes();
    case "read_notes":
      if (typeof a.path !== "string") return toolError("path must be a string");
      return readNote(a.path);
    case "search_notes":
      if (typeof a.query !== "string") return toolError("query must be a string");
      return searchNotes(a.query);
    default:
      return toolError(`no tool ${call.tool}`);
  }
}

// ---------------------------------------------------------------- storage

let sealKey; // the view storage key, a non-extractable CryptoKey; never stored

/** unsealKey asks the broker for the view storage key with this page's
 * view key (POST /local/storage-key) and imports it for AES-GCM only. */
async function unsealKey(viewKey) {
  const res = await fetch("/local/storage-key", {
    method: "POST",
    credentials: "same-origin",
    cache: "no-store",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ viewKey }),
  });
  if (!res.ok) throw new Error(`the broker did not hand this page its storage key (HTTP ${res.status})`);
  const { storageKey } = await res.json();
  const raw = Uint8Array.from(atob(storageKey.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
  return crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]);
}

/** seal encrypts a note as IV || AES-GCM(JSON {name, text}), bound to its
 * file name (additional data), so a sealed file moved under another name
 * does not open. */
async function seal(file, name, text) {
  const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
  const plain = new TextEncoder().encode(JSON.stringify({ name, text }));
  const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: new TextEncoder().encode(file) }, sealKey, plain);
  const out = new Uint8Array(IV_BYTES + sealed.byteLength);
  out.set(iv);
  out.set(new Uint8Array(sealed), IV_BYTES);
  return out;
}

/** unseal opens a sealed note; it throws on anything this broker's key
 * did not seal under that file name. */
async function unseal(file, bytes) {
  const iv = bytes.subarray(0, IV_BYTES);
  const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv, additionalData: new TextEncoder().encode(file) }, sealKey, bytes.subarray(IV_BYTES));
  const { name, text } = JSON.parse(new TextDecoder().decode(plain));
  if (typeof name !== "string" || typeof text !== "string") throw new Error("not a note");
  return { name, text };
}

function randomFileName() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("") + ".sealed";
}

async function opfsDir() {
  if (!navigator.storage || !navigator.storage.getDirectory) throw new Error("this browser has no origin-private file system");
  const root = await navigator.storage.getDirectory();
  return root.getDirectoryHandle(OPFS_DIR, { create: true });
}

/** loadStored reads and unseals the notes stored in OPFS; it returns how
 * many files did not open (not sealed by this broker, or damaged), which
 * are left alone and never served. */
async function loadStored() {
  stored.clear();
  let unreadable = 0;
  const dir = await opfsDir();
  for await (const [file, h] of dir.entries()) {
    if (h.kind !== "file" || stored.size >= MAX_NOTES) continue;
    const f = await h.getFile();
    if (f.size > MAX_SEALED_BYTES) continue;
    try {
      const { name, text } = await unseal(file, new Uint8Array(await f.arrayBuffer()));
      stored.set(name, { text, source: "stored", file });
    } catch {
      unreadable++;
    }
  }
  return unreadable;
}

/** storeNote seals a note into its own file (the one it had, or a new
 * random name) and returns the file's name. */
async function storeNote(name, text) {
  const dir = await opfsDir();
  const file = stored.get(name)?.file ?? randomFileName();
  const h = await dir.getFileHandle(file, { create: true });
  const w = await h.createWritable();
  await w.write(await seal(file, name, text));
  await w.close();
  return file;
}

async function removeStored(name) {
  const dir = await opfsDir();
  await dir.removeEntry(stored.get(name).file);
}

/** takePicked reads the files of the input into memory, bounded. */
async function takePicked(files) {
  const skipped = [];
  for (const f of files) {
    if (f.size > MAX_NOTE_BYTES) skipped.push(`${f.name} (over ${MAX_NOTE_BYTES} bytes)`);
    else if (picked.size >= MAX_NOTES && !picked.has(f.name)) skipped.push(`${f.name} (over ${MAX_NOTES} notes)`);
    else picked.set(f.name, { text: await f.text(), source: "picked" });
  }
  return skipped;
}

// ---------------------------------------------------------------- page

let door;
let viewKey; // from bootstrap, via app.js; offered on every channel socket
const calls = new Map(); // callId → { tool, why } while the answer is pending

function setServing(state, text) {
  const e = $("serving");
  e.dataset.state = state;
  e.textContent = text;
}

function note(text, state = "info") {
  const e = $("serve-note");
  e.textContent = text;
  e.dataset.state = state;
}

function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
}

function renderNotes() {
  const ul = $("notes-list");
  ul.replaceChildren();
  const all = notes();
  if (!all.size) ul.append(el("li", { class: "hint", text: "No notes yet: pick files, or store them in this browser." }));
  for (const [path, n] of [...all].sort()) {
    const li = el("li", { "data-path": path, "data-source": n.source }, el("span", { class: "code", text: path }), ` · ${n.source} · ${n.text.length} chars `);
    const b = el("button", { type: "button", class: "small", text: n.source === "stored" ? "Remove from this browser" : "Forget" });
    b.setAttribute("aria-label", `${n.source === "stored" ? "Remove" : "Forget"} ${path}`);
    b.addEventListener("click", async () => {
      try {
        if (n.source === "stored") {
          await removeStored(path);
          stored.delete(path);
        } else picked.delete(path);
      } catch (e) {
        note(`Could not remove ${path}: ${e.message}`, "error");
      }
      renderNotes();
    });
    li.append(b);
    ul.append(li);
  }
  $("store-picked").disabled = picked.size === 0;
}

function renderCatalog() {
  const dl = $("catalog");
  dl.replaceChildren();
  for (const d of catalog()) {
    dl.append(el("dt", { text: "descriptor" }), el("dd", { class: "code", text: d.descriptorId }));
    dl.append(el("dt", { text: "tools" }), el("dd", { text: d.tools.map((t) => t.name).join(", ") }));
    const b = d.bounds;
    dl.append(el("dt", { text: "bounds" }), el("dd", { text: `timeout ${b.timeoutMs} ms · output ≤ ${b.maxOutputBytes} bytes · no fetches` }));
    dl.append(el("dt", { text: "roots" }), el("dd", { class: "code", text: b.roots.length ? b.roots.join(", ") + " (read-only)" : "none" }));
  }
}

/** renderFolder shows the granted folder and offers the catalog that
 * follows from it to the broker, when serving. */
function renderFolder() {
  const name = folder.folderName();
  const waiting = folder.pendingName();
  const e = $("folder");
  e.dataset.state = name ? "granted" : waiting ? "prompt" : "none";
  e.textContent = name
    ? `Folder ${name}, read-only: served as ${folder.FOLDER_DESCRIPTOR_ID} (root ${folder.HANDLE_ROOT}).`
    : waiting
      ? `The browser asks you to allow this page to read ${waiting} again.`
      : "No folder granted.";
  $("folder-again").hidden = !waiting;
  $("forget-folder").hidden = !name && !waiting;
  renderCatalog();
  if (door) door.setCatalog(catalog());
}

/** crypt is the sealing a remembered grant is tagged with, while the page
 * holds the broker's key. */
const crypt = () => (sealKey ? { seal, unseal } : undefined);

function wireFolder() {
  $("grant-folder").addEventListener("click", async () => {
    try {
      const remembered = await folder.grantFolder(crypt());
      if (remembered) note("The folder is granted read-only and remembered in this browser until you forget it.", "ok");
      else note("The folder is granted for this tab only: without the broker's key the page does not remember it.", "warn");
    } catch (e) {
      if (e && e.name === "AbortError") note("No folder picked.");
      else note(`Could not grant the folder: ${e.message}`, "error");
    }
    renderFolder();
  });
  $("folder-again").addEventListener("click", async () => {
    try {
      if (!(await folder.allowAgain())) note("The browser did not allow reading the folder.", "warn");
    } catch (e) {
      note(`Could not read the folder: ${e.message}`, "error");
    }
    renderFolder();
  });
  $("forget-folder").addEventListener("click", async () => {
    try {
      await folder.forgetFolder();
      note("The folder is forgotten: the page no longer reads or remembers it.");
    } catch (e) {
      note(`Could not forget the folder: ${e.message}`, "error");
    }
    renderFolder();
  });
}

function logCall(callId, outcome) {
  const c = calls.get(callId);
  calls.delete(callId);
  const ok = outcome === "ok";
  const li = el("li", { "data-outcome": ok ? "ok" : "refused", "data-tool": c ? c.tool : "" });
  li.append(el("span", { class: "code", text: c ? c.tool : "(refused before a tool ran)" }), " ", el("span", { class: ok ? "okay" : "bad", text: ok ? "ok" : `refused ${outcome}` }));
  if (!ok && c && c.why) li.append(" ", el("span", { class: "why", text: c.why }));
  const ol = $("calls");
  ol.prepend(li);
  while (ol.children.length > MAX_CALLS_SHOWN) ol.lastChild.remove();
  $("calls-count").textContent = String(Number($("calls-count").textContent) + 1);
}

function onDoorEvent(e) {
  switch (e.type) {
    case "connected":
      setServing("connecting", "connected, sending the catalog");
      break;
    case "catalog":
      setServing("serving", "serving");
      note(`This tab serves ${catalog().map((d) => d.descriptorId).join(" and ")} to the broker's callers.`, "ok");
      break;
    case "disconnected":
      if (door) setServing("reconnecting", `connection lost (${e.code}${e.reason ? " " + e.reason : ""})`);
      break;
    case "reconnecting":
      setServing("reconnecting", `reconnecting (attempt ${e.attempt})`);
      break;
    case "answered":
      logCall(e.callId, e.outcome);
      break;
    case "stopped":
      stopped(e);
      break;
  }
}

function stopped(e) {
  door = undefined;
  $("serve").checked = false;
  if (e.reason === "page-replaced") {
    setServing("replaced", "replaced");
    note("Another tab now serves the tools. This tab stopped serving; turn it on again here to take them back.", "warn");
  } else if (e.reason === "executor-unauthenticated") {
    setServing("refused", "refused");
    note(
      "The broker refused this page as an executor (1008 executor-unauthenticated): only a page on the broker's own loopback origin, " +
        "with a session minted for that origin, can serve tools. This session was minted for another origin.",
      "error",
    );
  } else if (e.code === 4402) {
    setServing("expired", "session expired");
    note("The session expired: the broker closed this page's executor (4402).", "error");
  } else {
    setServing("off", "off");
    note(e.code === 1000 && !e.reason ? "Serving is off." : `Stopped (${e.code}${e.reason ? " " + e.reason : ""}).`);
  }
}

function startServing() {
  if (location.protocol !== "http:" || !["127.0.0.1", "localhost", "[::1]"].includes(location.hostname)) {
    $("serve").checked = false;
    setServing("refused", "unavailable");
    note("Only a page on the broker's own loopback origin (http://127.0.0.1, localhost or [::1] on the broker's port) can serve tools.", "error");
    return;
  }
  setServing("connecting", "connecting");
  note("Connecting to the broker's channel…");
  const url = `ws://${location.host}/local/channel`;
  // Events of a door the user already turned off are not this tab's
  // state any more.
  const mine = (e) => {
    if (door === me || e.type === "answered") onDoorEvent(e);
  };
  const protocols = viewKey ? viewProtocols(viewKey) : undefined;
  const me = createExecutorDoor({
    url,
    catalog: catalog(),
    WebSocket: (u) => new WebSocket(u, protocols),
    handler: async (call) => {
      const r = await handle(call);
      calls.set(call.callId, { tool: call.tool, why: r.ok ? "" : r.why || r.refused });
      return r;
    },
    onEvent: mine,
  });
  door = me;
}

/** startTools wires the panel; called once the page holds the view
 * cookie and its view key. Serving starts off: the user turns it on. */
export async function startTools(key) {
  viewKey = key;
  renderCatalog();
  renderNotes();
  $("serve").addEventListener("change", () => {
    if ($("serve").checked) {
      if (!door) startServing();
    } else if (door) {
      const d = door;
      door = undefined;
      setServing("off", "off");
      note("Serving is off.");
      // Off withdraws the tools: the empty catalog replaces the one the
      // broker remembers for the page, which a tab that merely goes away
      // leaves behind (refused no-page).
      d.setCatalog([]);
      void d.close();
    }
  });
  wireFolder();
  $("pick").addEventListener("change", async () => {
    const skipped = await takePicked($("pick").files);
    note(skipped.length ? `Not taken: ${skipped.join(", ")}` : "Picked files are kept in this tab's memory.", skipped.length ? "warn" : "info");
    renderNotes();
  });
  $("store-picked").addEventListener("click", async () => {
    try {
      if (!sealKey) throw new Error("this page has no storage key from the broker");
      for (const [name, n] of picked) {
        const file = await storeNote(name, n.text);
        stored.set(name, { text: n.text, source: "stored", file });
      }
      picked.clear();
      note("Stored in this browser's private storage, sealed with the broker's key: they stay across reloads until removed.", "ok");
    } catch (e) {
      note(`Could not store: ${e.message}`, "error");
    }
    renderNotes();
  });
  try {
    sealKey = await unsealKey(viewKey);
    const unreadable = await loadStored();
    if (unreadable) note(`${unreadable} stored file(s) did not open with the broker's key and are not served.`, "warn");
  } catch (e) {
    note(`Stored notes unavailable: ${e.message}`, "warn");
  }
  try {
    if ((await folder.loadFolder(crypt())) === "forgotten") note("A remembered folder this broker's page did not grant is forgotten: grant it again.", "warn");
  } catch (e) {
    note(`The remembered folder is unavailable: ${e.message}`, "warn");
  }
  renderNotes();
  renderFolder();
  $("grant-folder").disabled = false;
  $("serve").disabled = false;
  $("tools").dataset.ready = "true";
}
