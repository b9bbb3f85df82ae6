// Shared helpers of the host, view and example suites: a broker launched
// from AIRLOCK_BIN into a private data directory, and a Node stand-in for a
// browser view (bootstrap with Origin, the Set-Cookie kept, ws sockets that
// send that cookie and Origin the way a browser would).
//
// node --test also runs this file as a test file; it declares no tests.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';

import { launch } from '@airlock/client/host';
import { ViewClient, bootstrap, parseFragment } from '@airlock/client/view';

/** The binary under test; the suites skip (with this reason) without it. */
export const BIN = process.env.AIRLOCK_BIN;
export const skip = BIN
  ? false
  : 'AIRLOCK_BIN is unset: build the broker (go build -o /tmp/airlock ./cmd/airlock) and run AIRLOCK_BIN=/tmp/airlock node --test test/';

/** A bound on every test, so a hang fails instead of wedging the run. */
export const timeout = 60_000;

/** A fresh 0700 data directory, removed by the returned cleanup. */
export async function dataDir() {
  const dir = await mkdtemp(join(tmpdir(), 'airlock-jsclient-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * Launches the broker on port 0 (bundled plugins left out: these suites
 * need only the session relay), with `opts` passed on to launch.
 * `t.after` shuts it down and removes its data directory. The broker's stderr lines are kept in `logs`.
 */
export async function startBroker(t, extraArgs = [], opts = {}) {
  const { dir, cleanup } = await dataDir();
  const logs = [];
  const broker = await launch({ bin: BIN, args: ['--data', dir, '--no-builtin', ...extraArgs], onLog: (l) => logs.push(l), ...opts });
  t.after(async () => {
    await broker.shutdown().catch(() => {});
    await cleanup();
  });
  return { broker, logs, dir };
}

/**
 * A fetch that behaves like a page of `origin`: it sends that Origin and
 * keeps the cookies the broker sets, as a browser's cookie jar would.
 */
export function browserFetch(origin) {
  const jar = new Map();
  const f = async (url, init) => {
    const res = await fetch(url, { ...init, headers: { ...init.headers, Origin: origin } });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair.indexOf('=');
      jar.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    return res;
  };
  f.jar = jar;
  f.cookieHeader = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  return f;
}

/**
 * A WebSocket constructor for ViewClient that sends the jar's cookies, the
 * page's Origin and the subprotocols it is given (the view key), and records every socket it makes (so a test can cut
 * one as a network would).
 */
export function browserWebSocket(fetchWithJar, origin) {
  const sockets = [];
  class BrowserWebSocket extends WebSocket {
    constructor(url, protocols) {
      super(url, protocols ?? [], { headers: { Cookie: fetchWithJar.cookieHeader(), Origin: origin } });
      sockets.push(this);
    }
  }
  BrowserWebSocket.sockets = sockets;
  return BrowserWebSocket;
}

/**
 * Opens a view of a session from its view URL, as the built-in page does:
 * the fragment is bootstrapped, then the view connects. Returns the view,
 * its socket log and the session info.
 */
export async function openView(t, viewUrl, opts = {}) {
  const u = new URL(viewUrl);
  const origin = opts.origin ?? u.origin;
  const f = browserFetch(origin);
  const info = await bootstrap(parseFragment(u.hash), { baseUrl: u.origin, fetch: f });
  const WS = browserWebSocket(f, origin);
  const view = new ViewClient({ workspaceSessionId: info.workspaceSessionId, viewKey: info.viewKey, baseUrl: u.origin, WebSocket: WS, ...opts.view });
  t.after(() => view.close());
  if (opts.connect !== false) await view.connect();
  return { view, info, sockets: WS.sockets, fetch: f };
}

/** Resolves with the arguments of the first `event` for which `pred` holds. */
export function next(emitter, event, pred = () => true) {
  return new Promise((resolve) => {
    const off = emitter.on(event, (...args) => {
      if (pred(...args)) {
        off();
        resolve(args);
      }
    });
  });
}

/** Resolves once `view.state` satisfies `pred` (checked now and on each change). */
export function stateWhere(view, pred) {
  if (pred(view.state)) return Promise.resolve(view.state);
  return next(view, 'state', (s) => pred(s)).then(([s]) => s);
}
