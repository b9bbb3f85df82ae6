// @airlock/client/host against the real broker (AIRLOCK_BIN): launch on
// port 0 (and with a Unix socket), mint, the host socket's refusals, relay
// both ways, requests with progress, results and cancel, snapshots, expiry
// (4402) and shutdown.

import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { describe, test } from 'node:test';
import WebSocket from 'ws';

import { AirlockError, Broker, CloseCode, connectHost, launch } from '@airlock/client/host';
import { BIN, dataDir, next, openView, skip, startBroker, stateWhere, timeout } from './support/local.mjs';

describe('host', { skip, timeout }, () => {
  test('launch: port 0, listening line read, token only in the environment', async (t) => {
    const { broker, dir } = await startBroker(t);
    assert.match(broker.addr, /^127\.0\.0\.1:\d+$/);
    assert.notEqual(broker.addr, '127.0.0.1:0');
    assert.equal(broker.baseUrl, `http://${broker.addr}`);
    const health = await fetch(`${broker.baseUrl}/healthz`);
    assert.equal(health.status, 200);
    const argv = (await readFile(`/proc/${broker.pid}/cmdline`, 'utf8').catch(() => null))?.split('\0').filter(Boolean);
    if (argv) assert.deepEqual(argv.slice(1), ['serve', '--listen', '127.0.0.1:0', '--data', dir, '--no-builtin']);
    // The token is nowhere a log or a dump would find it.
    assert.doesNotMatch(JSON.stringify(broker), /token/i);
    assert.deepEqual(Object.keys(broker).sort(), ['addr', 'baseUrl', 'exited', 'origin', 'pid', 'socket']);
    assert.equal(broker.socket, undefined);
    assert.doesNotMatch(inspect(broker, { showHidden: true, depth: 5 }), /[A-Za-z0-9_-]{43}/);
  });

  test('launch: a binary that is not there rejects', async () => {
    await assert.rejects(launchMissing(), /cannot start the broker|exited/);
  });

  test('launch: --token-file is refused (the token is launch\'s own)', async () => {
    const { launch } = await import('@airlock/client/host');
    await assert.rejects(launch({ bin: BIN, args: ['--token-file', '/dev/null'] }), TypeError);
  });

  test('mint: the session and the view URL as airlock mint prints it', async (t) => {
    const { broker } = await startBroker(t);
    const s = await broker.mint({ ttlSeconds: 600, canProposeSourceEdits: true });
    assert.match(s.workspaceSessionId, /^ws_/);
    assert.equal(s.launchOrigin, broker.origin);
    assert.equal(s.protocolVersion, 1);
    assert.equal(s.capabilities.canProposeSourceEdits, true);
    assert.equal(s.viewFragment, `${s.workspaceSessionId}.${s.viewCredential}`);
    assert.equal(s.viewUrl, `${broker.baseUrl}/local/view#${s.workspaceSessionId}.${s.viewCredential}`);
    assert.ok(s.hostCookieKey.length >= 43);
  });

  test('mint: a wrong launch token is refused 401 INVALID_CREDENTIALS', async (t) => {
    const { broker } = await startBroker(t);
    const wrong = new Broker(broker.baseUrl, 'w'.repeat(43));
    await assert.rejects(wrong.mint(), (e) => e instanceof AirlockError && e.status === 401 && e.code === 'INVALID_CREDENTIALS');
  });

  test('socket: mint and the host socket over the Unix socket, the view over TCP', async (t) => {
    const { dir, cleanup } = await dataDir();
    t.after(cleanup);
    const path = join(dir, 'airlock.sock');
    const { broker } = await startBroker(t, [], { socket: path });
    assert.equal(broker.socket, path);
    assert.deepEqual(JSON.parse(JSON.stringify(broker)), { baseUrl: broker.baseUrl, socket: path });
    const argv = (await readFile(`/proc/${broker.pid}/cmdline`, 'utf8').catch(() => null))?.split('\0').filter(Boolean);
    if (argv) assert.deepEqual(argv.slice(1, 5), ['serve', '--listen', '127.0.0.1:0', '--listen-unix']);
    const s = await broker.mint();
    assert.equal(s.socket, path);
    assert.equal(s.launchOrigin, broker.origin, 'the view origin stays the TCP one');
    const host = await broker.connectHost(s);
    const joined = next(host, 'viewState', (p) => p.state === 'connected');
    const { view } = await openView(t, s.viewUrl);
    await joined;
    host.send('focusNode', { nodeId: 'over-the-socket' });
    await stateWhere(view, (st) => st.focusNode?.nodeId === 'over-the-socket');
    await t.test('a wrong launch token over the socket: 401', async () => {
      const wrong = new Broker(broker.baseUrl, 'w'.repeat(43), { socket: path });
      await assert.rejects(wrong.mint(), (e) => e instanceof AirlockError && e.status === 401 && e.code === 'INVALID_CREDENTIALS');
    });
    await t.test('a wrong cookie over the socket: 4401', async () => {
      await assert.rejects(connectHost({ ...s, hostCookieKey: 'x'.repeat(43) }), closedWith(4401, 'INVALID_CREDENTIALS'));
    });
    await t.test('the socket is what is dialled: a missing one fails even with the right base URL', async () => {
      const missing = new Broker(broker.baseUrl, 'w'.repeat(43), { socket: join(dir, 'missing.sock') });
      await assert.rejects(missing.mint(), /ENOENT/);
      await assert.rejects(connectHost({ ...s, socket: join(dir, 'missing.sock') }));
    });
    await t.test('a relative socket path is refused before anything starts', async () => {
      await assert.rejects(launch({ bin: BIN, socket: 'airlock.sock' }), TypeError);
      assert.throws(() => new Broker(broker.baseUrl, 'w'.repeat(43), { socket: 'airlock.sock' }), TypeError);
    });
    await host.close();
  });

  test('host socket: handshake, and the refusals by close code', async (t) => {
    const { broker } = await startBroker(t);
    const s = await broker.mint();
    await t.test('wrong cookie: 4401', async () => {
      await assert.rejects(connectHost({ ...s, hostCookieKey: 'x'.repeat(43) }), closedWith(4401, 'INVALID_CREDENTIALS'));
    });
    await t.test('wrong Origin: 4403', async () => {
      await assert.rejects(connectHost({ ...s, launchOrigin: 'http://evil.example' }), closedWith(4403, 'INVALID_ORIGIN'));
    });
    const host = await broker.connectHost(s);
    assert.equal(host.hostEpoch, 1);
    assert.deepEqual([...host.views], []);
    await t.test('a second host: 4408, the first unaffected', async () => {
      await assert.rejects(connectHost(s), closedWith(4408, 'HOST_ALREADY_CONNECTED'));
      assert.ok(host.open);
    });
    await host.close();
    assert.equal(host.send('focusNode', { nodeId: 'late' }), false, 'nothing is sent after close');
  });

  test('relay: host state reaches the view with hostSequence; views are tracked', async (t) => {
    const { broker } = await startBroker(t);
    const s = await broker.mint();
    const host = await broker.connectHost(s);
    const joined = next(host, 'viewState', (p) => p.state === 'connected');
    const { view } = await openView(t, s.viewUrl);
    const [vs] = await joined;
    assert.equal(vs.viewId, view.viewId);
    assert.ok(host.views.has(view.viewId));

    const got = [];
    view.on('focusNode', (p, env) => got.push([p.nodeId, env.hostSequence]));
    host.send('focusNode', { nodeId: 'a' });
    host.send('projection', { mode: 'flat' });
    host.send('focusNode', { nodeId: 'b' });
    assert.equal(host.hostSequence, 3);
    await stateWhere(view, (st) => st.focusNode?.nodeId === 'b');
    assert.deepEqual(got.slice(-2), [['a', 1], ['b', 3]]);
    assert.equal(view.lastHostSequence, 3);
    assert.deepEqual(view.state.projection, { mode: 'flat' });

    const acked = next(view, 'ack');
    host.send('ack', { note: 'hi' });
    assert.deepEqual((await acked)[0], { note: 'hi' });

    const left = next(host, 'viewState', (p) => p.state === 'disconnected');
    view.close();
    await left;
    assert.equal(host.views.size, 0);
  });

  test('snapshots: a late view gets the host state at its sequence', async (t) => {
    const { broker } = await startBroker(t);
    const s = await broker.mint();
    const host = await broker.connectHost(s);
    host.send('activeTarget', { file: 'main.go' });
    host.send('focusNode', { nodeId: 'n1' });
    const asked = next(host, 'snapshotRequest');
    const { view } = await openView(t, s.viewUrl, { connect: false });
    const snap = next(view, 'snapshot');
    await view.connect();
    assert.deepEqual((await asked)[0], { lastHostSequence: null });
    const [p] = await snap;
    assert.equal(p.atHostSequence, 2);
    assert.deepEqual(p.state, { activeTarget: { file: 'main.go' }, focusNode: { nodeId: 'n1' } });
    assert.equal(view.stale, false);
    assert.equal(view.lastHostSequence, 2);
  });

  test('snapshots: a custom snapshot callback answers each request', async (t) => {
    const { broker } = await startBroker(t);
    const s = await broker.mint();
    let calls = 0;
    const host = await broker.connectHost(s, { snapshot: () => ({ custom: ++calls }) });
    const { view } = await openView(t, s.viewUrl, { connect: false });
    const snap = next(view, 'snapshot');
    await view.connect();
    assert.deepEqual((await snap)[0].state, { custom: 1 });
    assert.equal(host.hostSequence, 0);
  });

  test('requests: each family relays, with progress then the terminal result', async (t) => {
    const { broker } = await startBroker(t);
    const s = await broker.mint({ canProposeSourceEdits: true });
    const host = await broker.connectHost(s);
    const seen = [];
    host.on('request', (req) => {
      seen.push([req.family, req.requestId]);
      switch (req.family) {
        case 'validate':
          req.result({ valid: true });
          break;
        case 'captureInspect':
          req.result({ capture: { rows: 3 } });
          break;
        case 'export':
          req.result({ format: 'svg', body: '<svg/>' });
          break;
        case 'sourceEdit':
          req.progress({ diff: '+1' });
          req.result({ applied: false });
          break;
        case 'graphPublish':
          req.progress({ phase: 'signing_in', connectUrl: 'https://example.com/connect' });
          req.progress({ phase: 'uploading' });
          req.result({ status: 'published', graphUrl: 'https://example.com/g/1', shareUrl: 'https://example.com/s/1' });
          break;
        case 'candidate':
          req.result({ candidates: ['x', 'y'] });
          break;
      }
      assert.equal(req.settled, true);
    });
    const typed = [];
    host.handle('graphPublish', (req) => typed.push(req.family));
    const { view } = await openView(t, s.viewUrl);

    const v = await view.validate({ file: 'a.go' }).result;
    assert.deepEqual(v.target, { file: 'a.go' });
    assert.equal(v.valid, true);
    assert.deepEqual((await view.captureInspect('n1').result).capture, { rows: 3 });
    assert.equal((await view.export(['n1', 'n2']).result).body, '<svg/>');

    const edits = [];
    const se = view.sourceEdit({ file: 'a.go', line: 3 }).onProgress((p) => edits.push(p.diff));
    assert.equal((await se.result).applied, false);
    assert.deepEqual(edits, ['+1']);

    const phases = [];
    const gzip = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0]).toString('base64');
    const gp = view.graphPublish('graph', gzip).onProgress((p) => phases.push(p.phase));
    const gr = await gp.result;
    assert.equal(gr.status, 'published');
    assert.deepEqual(phases, ['signing_in', 'uploading']);

    const c = await view.candidate({ q: 'x' }).result;
    assert.equal(c.viewId, view.viewId);
    assert.deepEqual(c.candidates, ['x', 'y']);

    assert.deepEqual(typed, ['graphPublish']);
    assert.deepEqual(seen.map(([f]) => f), ['validate', 'captureInspect', 'export', 'sourceEdit', 'graphPublish', 'candidate']);
    assert.equal(host.pending.size, 0);
  });

  test('requests: the view cancels; the host sees the cancel and its signal aborts', async (t) => {
    const { broker } = await startBroker(t);
    const s = await broker.mint();
    const host = await broker.connectHost(s);
    const got = next(host, 'request');
    const { view } = await openView(t, s.viewUrl);
    const h = view.validate('slow');
    const [req] = await got;
    const cancelled = next(host, 'cancel');
    h.cancel();
    await assert.rejects(h.result, (e) => e.code === 'REQUEST_CANCELLED' && e.requestId === h.requestId);
    const [creq, payload] = await cancelled;
    assert.equal(creq, req);
    assert.equal(payload.requestId, h.requestId);
    assert.equal(req.signal.aborted, true);
    assert.equal(req.result({ valid: true }), false, 'a reply after cancel is not sent');
  });

  test('requests: a view leaving cancels its requests on the host (reason view-disconnected)', async (t) => {
    const { broker } = await startBroker(t);
    const s = await broker.mint();
    const host = await broker.connectHost(s);
    const got = next(host, 'request');
    const { view } = await openView(t, s.viewUrl);
    const h = view.export('big');
    const [req] = await got;
    const cancelled = next(host, 'cancel');
    view.close();
    await assert.rejects(h.result, (e) => e.code === 'CONNECTION_CLOSED');
    const [, payload] = await cancelled;
    assert.equal(payload.reason, 'view-disconnected');
    assert.equal(req.signal.aborted, true);
  });

  test('requests: a candidate request of a view that left is aborted on the host, not kept', async (t) => {
    const { broker } = await startBroker(t);
    const s = await broker.mint();
    const host = await broker.connectHost(s);
    const got = next(host, 'request');
    const { view } = await openView(t, s.viewUrl);
    const h = view.candidate();
    const [req] = await got;
    assert.equal(req.viewId, view.viewId);
    const left = next(host, 'viewState', (p) => p.state === 'disconnected');
    view.close();
    await assert.rejects(h.result, (e) => e.code === 'CONNECTION_CLOSED');
    await left;
    assert.equal(req.signal.aborted, true);
    assert.equal(host.pending.size, 0);
    assert.equal(req.result({ candidates: [] }), false);
  });

  test('refusals: a reply for a request never seen is refused, the socket stays', async (t) => {
    const { broker } = await startBroker(t);
    const s = await broker.mint();
    const host = await broker.connectHost(s);
    const refused = next(host, 'refusal');
    host.send('validateResult', { requestId: 'never-seen', target: 'x' });
    const [err] = await refused;
    assert.equal(err.code, 'INVALID_MESSAGE');
    assert.equal(err.detail, 'unknown-request');
    assert.equal(err.requestId, 'never-seen');
    assert.ok(host.open);
  });

  test('requests with no host are refused to the view (detail no-host)', async (t) => {
    const { broker } = await startBroker(t);
    const s = await broker.mint();
    const { view } = await openView(t, s.viewUrl);
    await assert.rejects(view.validate('x').result, (e) => e.code === 'INVALID_MESSAGE' && e.detail === 'no-host');
  });

  test('expiry: host and view are closed 4402 and the view is expired', async (t) => {
    const { broker } = await startBroker(t);
    const s = await broker.mint({ ttlSeconds: 1 });
    // The session lives one second: each step either happens in time and
    // sees the 4402 close later, or too late and sees the expiry at once
    // (410 at bootstrap, 4402 at the handshake). Both are the contract.
    let hostClose;
    try {
      const host = await broker.connectHost(s);
      hostClose = (await host.closed).code;
    } catch (e) {
      hostClose = e.closeCode;
    }
    assert.equal(hostClose, CloseCode.CREDENTIAL_EXPIRED);

    const s2 = await broker.mint({ ttlSeconds: 1 });
    const { view, status } = await viewUntilFinal(t, s2.viewUrl);
    assert.equal(status, 'expired');
    assert.equal(view?.status ?? 'expired', 'expired');

    // The tombstone answers 410 to a late bootstrap.
    await assert.rejects(openView(t, s2.viewUrl), (e) => e.status === 410 && e.code === 'CREDENTIAL_EXPIRED');
  });

  test('shutdown: SIGTERM, the host socket closes, exit 0', async (t) => {
    const { broker } = await startBroker(t);
    const s = await broker.mint();
    const host = await broker.connectHost(s);
    await broker.shutdown();
    assert.equal(await broker.exited, 0);
    const info = await host.closed;
    assert.ok(info.code >= 1000);
  });
});

async function launchMissing() {
  const { launch } = await import('@airlock/client/host');
  return launch({ bin: '/nonexistent/airlock-binary' });
}

function closedWith(code, name) {
  return (e) => e instanceof AirlockError && e.closeCode === code && e.code === name;
}

/** Opens a view of a one-second session and follows it to a final status. */
async function viewUntilFinal(t, viewUrl) {
  let opened;
  try {
    opened = await openView(t, viewUrl, { connect: false });
  } catch (e) {
    if (e.status === 410) return { view: undefined, status: 'expired' };
    throw e;
  }
  const { view } = opened;
  const final = next(view, 'status', (st) => st === 'expired' || st === 'failed' || st === 'closed');
  await view.connect().catch(() => {});
  if (view.status === 'expired' || view.status === 'failed') return { view, status: view.status };
  const [status] = await final;
  return { view, status };
}

void WebSocket;

// The launcher's own refusals, against stand-in brokers (shell scripts)
// whose behaviour the test fixes: none of these depends on timing, since
// each stand-in either answers at once or never does.
describe('launch and shutdown refusals (stand-in brokers)', { timeout }, () => {
  async function standIn(t, body) {
    const { dir, cleanup } = await dataDir();
    t.after(cleanup);
    const bin = join(dir, 'fake-airlock');
    await writeFile(bin, `#!/bin/sh\n${body}\n`, { mode: 0o700 });
    return bin;
  }
  const listening = `echo '{"event":"listening","addr":"127.0.0.1:1","pid":'$$'}'`;

  test('a first stdout line that is not the listening line', async (t) => {
    const bin = await standIn(t, 'echo hello; echo "why it failed" >&2; sleep 60');
    await assert.rejects(launch({ bin }), /not the listening line/);
  });

  test('an exit before listening carries the last log line', async (t) => {
    const bin = await standIn(t, 'echo "config: bad setting" >&2; exit 2');
    await assert.rejects(launch({ bin }), /exited \(2\) before listening: config: bad setting/);
  });

  test('no listening line within startTimeoutMs', async (t) => {
    const bin = await standIn(t, 'exec sleep 60');
    await assert.rejects(launch({ bin, startTimeoutMs: 50 }), (e) => e instanceof AirlockError && e.code === 'TIMEOUT');
  });

  test('the token is in AIRLOCK_LOCAL_TOKEN only, 43 URL-safe characters', async (t) => {
    const bin = await standIn(t, `trap 'exit 0' TERM; echo "tok=$AIRLOCK_LOCAL_TOKEN alt=\${TENSORVIZ_LOCAL_TOKEN:-none} args=$*" >&2; ${listening}; while :; do sleep 1; done`);
    let seen;
    const logged = new Promise((resolve) => (seen = resolve));
    const b = await launch({ bin, env: { AIRLOCK_LOCAL_TOKEN: 'would-win', TENSORVIZ_LOCAL_TOKEN: 'seed-alias' }, onLog: (l) => l.startsWith('tok=') && seen(l) });
    const line = await logged;
    await b.shutdown();
    assert.match(line, /^tok=[A-Za-z0-9_-]{43} alt=none args=serve --listen 127\.0\.0\.1:0$/);
  });

  test('shutdown: a broker that ignores SIGTERM is killed past the bound', async (t) => {
    const bin = await standIn(t, `trap '' TERM; ${listening}; while :; do sleep 1; done`);
    const b = await launch({ bin });
    await assert.rejects(b.shutdown({ timeoutMs: 50 }), (e) => e.code === 'TIMEOUT');
    assert.equal(await b.exited, null);
  });

  test('shutdown: a non-zero exit is an error', async (t) => {
    const bin = await standIn(t, `trap 'exit 3' TERM; ${listening}; while :; do sleep 1; done`);
    const b = await launch({ bin });
    await assert.rejects(b.shutdown(), /exited with 3/);
  });
});
