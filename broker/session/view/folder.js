// The handle root: a folder the user grants this page through the File
// System Access API (showDirectoryPicker, mode "read"), served read-only
// as the descriptor page-folder, whose bounds name the root "handle"
// (PROTOCOL section 6.1). The handle is remembered in this origin's
// IndexedDB with a tag sealed by the broker's view storage key, so it
// survives a reload; the browser asks the user again for read access
// whenever it requires (queryPermission, then requestPermission on a
// click). The folder is the user's own and is never written: no tool
// here writes, and the page asks for read access only.
//
// A path names a file below the folder: "/"-separated names, checked
// before any lookup (segments). The API has no links and no ".."; what a
// handle reaches is the folder and what is below it.
//
// Why a root of its own, and why the sealed tag: RATIONALE.md, "Why is a
// folder the user grants a root of its own, read-only, remembered under a
// sealed tag?".

import { observe } from "./client/door.js";

export const FOLDER_DESCRIPTOR_ID = "page-folder";
export const HANDLE_ROOT = "handle";

const MAX_FILE_BYTES = 1 << 20; // a larger file is refused by name
const MAX_LISTED = 1000; // files one list_files names
const MAX_VISITED = 5000; // entries one list_files walks
const MAX_DEPTH = 16; // segments of a path, folders walked deep
const MAX_PATH_CHARS = 1024;
const DB_NAME = "airlock-view";
const DB_STORE = "grants";
const GRANT_KEY = "handle";
const GRANT_TAG = "handle-root"; // the seal's additional data for the grant's tag

export const FOLDER_TOOLS = [
  {
    name: "list_files",
    description: "List the files of the folder the user granted this browser page (read-only)",
    inputSchema: { type: "object", properties: {}, additionalProperties: false },
  },
  {
    name: "read_file",
    description: "Read one file of the folder the user granted this browser page (its path as list_files names it)",
    inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"], additionalProperties: false },
  },
];

const BAD_PATH = "path must be relative to the folder: names separated by /, none of them empty, . or .., and no \\";

let folder; // the granted handle, readable; undefined while none is
let pending; // a remembered handle the browser wants the user to allow again

/** folderName is the granted folder's name, or undefined. */
export function folderName() {
  return folder ? folder.name || "(unnamed folder)" : undefined;
}

/** segments splits path into the names to look up, or returns undefined
 * for a path that is empty, absolute, holds a backslash or NUL, an empty,
 * "." or ".." segment, or is too long or deep. */
function segments(path) {
  if (path === "" || path.length > MAX_PATH_CHARS || path.startsWith("/") || path.includes("\\") || path.includes("\0")) return undefined;
  const segs = path.split("/");
  if (segs.length > MAX_DEPTH || segs.some((s) => s === "" || s === "." || s === "..")) return undefined;
  return segs;
}

// ---------------------------------------------------------------- tools

const quoted = (path) => JSON.stringify(path.slice(0, 200));

/** folderCall runs one call of page-folder; fail is the page's toolError
 * (a tool's own error, PROTOCOL section 8). */
export async function folderCall(call, fail) {
  if (!folder) return fail("no folder is granted to this page: the user grants one in the page");
  try {
    if (call.tool === "list_files") return observe(await listFiles());
    if (call.tool === "read_file") {
      if (typeof call.args.path !== "string") return fail("path must be a string");
      const segs = segments(call.args.path);
      if (!segs) return fail(BAD_PATH);
      return observe(await readFile(call.args.path, segs));
    }
    return fail(`no tool ${call.tool}`);
  } catch (e) {
    if (e instanceof Refusal) return fail(e.message);
    if (e && e.name === "NotAllowedError") return fail("the browser no longer lets this page read the folder: the user allows it again in the page");
    throw e;
  }
}

class Refusal extends Error {}

async function readFile(path, segs) {
  let h;
  try {
    let dir = folder;
    for (const s of segs.slice(0, -1)) dir = await dir.getDirectoryHandle(s);
    h = await lastName(dir, segs[segs.length - 1], path);
  } catch (e) {
    if (e && (e.name === "NotFoundError" || e.name === "TypeMismatchError")) throw new Refusal(`no file named ${quoted(path)} in the folder (list_files lists the files)`);
    throw e;
  }
  const f = await h.getFile();
  if (f.size > MAX_FILE_BYTES) throw new Refusal(`${quoted(path)} is over ${MAX_FILE_BYTES} bytes`);
  return { root: HANDLE_ROOT, path, text: await f.text() };
}

/** lastName opens the file a path ends in; a folder there is refused by
 * name (TypeMismatchError on the last name). */
async function lastName(dir, name, path) {
  try {
    return await dir.getFileHandle(name);
  } catch (e) {
    if (e && e.name === "TypeMismatchError") throw new Refusal(`${quoted(path)} is a folder, not a file (list_files lists the files)`);
    throw e;
  }
}

/** listFiles walks the folder breadth-first, bounded in entries, files
 * and depth; what a bound cut off is reported as truncated. */
async function listFiles() {
  const files = [];
  let visited = 0;
  let truncated = false;
  const queue = [{ dir: folder, prefix: "", depth: 1 }];
  while (queue.length) {
    const { dir, prefix, depth } = queue.shift();
    for await (const [name, h] of dir.entries()) {
      if (++visited > MAX_VISITED || files.length >= MAX_LISTED) {
        truncated = true;
        break;
      }
      if (h.kind === "directory") {
        if (depth < MAX_DEPTH) queue.push({ dir: h, prefix: prefix + name + "/", depth: depth + 1 });
        else truncated = true;
      } else files.push({ path: prefix + name, bytes: (await h.getFile()).size });
    }
    if (truncated && (visited > MAX_VISITED || files.length >= MAX_LISTED)) break;
  }
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { root: HANDLE_ROOT, folder: folderName(), files, truncated };
}

// ---------------------------------------------------------------- grant

/**
 * grantFolder asks the user for a folder and remembers it when crypt
 * ({seal, unseal} under the broker's key) is given.
 *
 * The picker is read from window when the user clicks: the browser test
 * replaces window.showDirectoryPicker in its tab with a function that
 * returns the origin's private file system root (the same interface, no
 * dialog). That is no door for a hostile page: another site's page
 * cannot reach this window, and script that runs in this origin already
 * has all the page has (its view key, the granted handle itself), so
 * replacing the picker gives it nothing more. The page takes no handle
 * from a message, a URL or a broker; only from the picker, or from its
 * own IndexedDB with a tag only a holder of the broker's key could seal.
 */
export async function grantFolder(crypt) {
  if (typeof window.showDirectoryPicker !== "function") throw new Error("this browser cannot grant a folder (it has no File System Access API)");
  const h = await window.showDirectoryPicker({ mode: "read" });
  if (!h || h.kind !== "directory") throw new Error("the picker gave no folder");
  if (await insidePrivateStorage(h)) throw new Error("a folder inside this browser's private storage is not the user's");
  folder = h;
  pending = undefined;
  if (!crypt) return false;
  const tag = await crypt.seal(GRANT_TAG, GRANT_KEY, h.name);
  await store("readwrite", (s) => s.put({ handle: h, tag }, GRANT_KEY));
  return true;
}

/**
 * loadFolder finds the remembered folder: "none", "granted", "prompt"
 * (the browser wants the user to allow reading it again: allowAgain on a
 * click) or "forgotten" (a record this broker's key did not seal, or a
 * folder inside the private storage, which is dropped). Without crypt
 * (no key from the broker) nothing is trusted, and nothing dropped.
 */
export async function loadFolder(crypt) {
  if (!crypt) return "none";
  const rec = await store("readonly", (s) => s.get(GRANT_KEY));
  if (!rec) return "none";
  let h;
  try {
    h = rec.handle;
    const { name, text } = await crypt.unseal(GRANT_TAG, rec.tag);
    if (h.kind !== "directory" || name !== GRANT_KEY || text !== h.name || (await insidePrivateStorage(h))) throw new Error("not this grant");
  } catch {
    await forgetFolder();
    return "forgotten";
  }
  if ((await h.queryPermission({ mode: "read" })) === "granted") {
    folder = h;
    return "granted";
  }
  pending = h;
  return "prompt";
}

/** allowAgain asks the browser to let the page read the remembered
 * folder again; it must run in a click (user activation). */
export async function allowAgain() {
  if (!pending) return false;
  if ((await pending.requestPermission({ mode: "read" })) !== "granted") return false;
  folder = pending;
  pending = undefined;
  return true;
}

export function pendingName() {
  return pending ? pending.name || "(unnamed folder)" : undefined;
}

export async function forgetFolder() {
  folder = undefined;
  pending = undefined;
  await store("readwrite", (s) => s.delete(GRANT_KEY));
}

/** insidePrivateStorage: a folder below this origin's private file
 * system root (which any page of the origin can fill) is not taken as
 * the user's; the root itself stands in for the picker in the test. */
async function insidePrivateStorage(h) {
  if (!navigator.storage || !navigator.storage.getDirectory) return false;
  const path = await (await navigator.storage.getDirectory()).resolve(h);
  return Array.isArray(path) && path.length > 0;
}

/** store runs one request on the grants store and resolves with its
 * result once the transaction completes. */
async function store(mode, request) {
  const db = await new Promise((resolve, reject) => {
    const open = indexedDB.open(DB_NAME, 1);
    open.onupgradeneeded = () => open.result.createObjectStore(DB_STORE);
    open.onsuccess = () => resolve(open.result);
    open.onerror = () => reject(open.error);
  });
  try {
    return await new Promise((resolve, reject) => {
      const tx = db.transaction(DB_STORE, mode);
      const req = request(tx.objectStore(DB_STORE));
      tx.oncomplete = () => resolve(req.result);
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error);
    });
  } finally {
    db.close();
  }
}
