// Shared helpers of the suites that play a page executor against the real
// broker (door.test.mjs, channel.test.mjs): `airlock serve` from
// AIRLOCK_BIN on port 0 with a launch token the suite knows (the caller
// API needs it), plain HTTP to it, and the view cookie a bootstrapped
// page would hold with its view key.
//
// node --test also runs this file as a test file; it declares no tests.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

/**
 * Starts the broker with its bundled plugins left out (args are added).
 * Resolves with its port, its own origin, the launch token, `http` and
 * `viewCookie` bound to it, and `stop`, which sends SIGTERM and asserts a
 * clean exit.
 */
export async function startPageBroker(bin, token, args = []) {
  const dataDir = mkdtempSync(join(tmpdir(), "jspage-"));
  const broker = spawn(bin, ["serve", "--listen", "127.0.0.1:0", "--data", dataDir, "--no-builtin", ...args], {
    env: { PATH: process.env.PATH, HOME: dataDir, AIRLOCK_LOCAL_TOKEN: token },
    stdio: ["ignore", "pipe", "pipe"],
  });
  broker.stderr.resume();
  const lines = createInterface({ input: broker.stdout });
  const first = await new Promise((resolve, reject) => {
    lines.once("line", resolve);
    broker.once("exit", (code) => reject(new Error(`airlock serve exited ${code}`)));
  });
  const listening = JSON.parse(first);
  assert.equal(listening.event, "listening");
  const port = Number(listening.addr.split(":").pop());
  const origin = `http://127.0.0.1:${port}`;
  const http = (method, path, opts) => httpTo(port, method, path, opts);
  return {
    port,
    origin,
    http,
    viewCookie: () => viewCookie(http, origin, token),
    async stop() {
      const exited = new Promise((resolve) => broker.once("exit", (code, signal) => resolve({ code, signal })));
      broker.kill("SIGTERM");
      const { code } = await exited;
      rmSync(dataDir, { recursive: true, force: true });
      assert.equal(code, 0, "airlock serve did not exit 0 on SIGTERM");
    },
  };
}

function httpTo(port, method, path, { body, headers = {} } = {}) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = request({ host: "127.0.0.1", port, method, path, headers: { ...headers, ...(data ? { "Content-Type": "application/json" } : {}) } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, text }));
    });
    req.on("error", reject);
    req.end(data);
  });
}

// viewCookie mints a session for the broker's own origin and bootstraps a
// view, returning the Cookie header value the browser would send and the
// view key the page keeps (offered with viewProtocols).
async function viewCookie(http, origin, token) {
  const mint = await http("POST", "/local/sessions", { body: { launchOrigin: origin }, headers: { "X-Tensorviz-Token": token } });
  assert.equal(mint.status, 201, mint.text);
  const { workspaceSessionId, viewCredential } = JSON.parse(mint.text);
  const boot = await http("POST", "/local/bootstrap", { body: { workspaceSessionId, viewCredential }, headers: { Origin: origin } });
  assert.equal(boot.status, 200, boot.text);
  const set = boot.headers["set-cookie"]?.[0];
  assert.match(set ?? "", /^tensorviz_local_browser_[0-9a-f]{16}=/);
  return { cookie: set.split(";")[0], viewKey: JSON.parse(boot.text).viewKey };
}

/** until resolves once cond() holds, polling every 10 ms, and fails the
 * test after 2000 tries instead of hanging. */
export async function until(cond, what) {
  for (let i = 0; i < 2000; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`gave up waiting for ${what}`);
}
