// @airlock/client/view: bootstrap and its refusals, reconnect with
// lastHostSequence, stale state across host changes, expiry as a final
// "expired" state, against the real broker (AIRLOCK_BIN); the reconnect
// policy itself against a fake socket the test controls.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { AirlockError, RECONNECT_DEFAULTS, ViewClient, backoffDelay, bootstrap, parseFragment } from '@airlock/client/view';
import { browserFetch, next, openView, skip, startBroker, stateWhere, timeout } from './support/local.mjs';

describe('view against the broker', { skip, timeout }, () => {
  test('bootstrap: the credential works once, from the launch origin only', async (t) => {
    const { broker } = await startBroker(t);
    const s = await broker.mint();
    const frag = parseFragment(new URL(s.viewUrl).hash);
    assert.deepEqual(frag, { workspaceSessionId: s.workspaceSessionId, viewCredential: s.viewCredential });

    const evil = browserFetch('http://evil.example');
    await assert.rejects(bootstrap(frag, { baseUrl: broker.baseUrl, fetch: evil }), refused(403, 'INVALID_ORIGIN'));

    const page = browserFetch(broker.origin);
    const info = await bootstrap(frag, { baseUrl: broker.baseUrl, fetch: page });
    assert.equal(info.workspaceSessionId, s.workspaceSessionId);
    assert.equal(info.viewCredential, undefined, 'bootstrap returns no credential');
    assert.equal(page.jar.size, 1);
    const [[name, cookieKey]] = page.jar;
    assert.match(name, /^tensorviz_local_browser_[0-9a-f]{16}$/);
    assert.match(info.viewKey, /^[A-Za-z0-9_-]{43}$/, 'bootstrap returns the view key');
    assert.notEqual(info.viewKey, cookieKey);

    await assert.rejects(bootstrap(frag, { baseUrl: broker.baseUrl, fetch: browserFetch(broker.origin) }), refused(401, 'INVALID_CREDENTIALS'));
    await assert.rejects(bootstrap({ ...frag, viewCredential: s.hostCookieKey }, { baseUrl: broker.baseUrl, fetch: browserFetch(broker.origin) }), refused(401, 'INVALID_CREDENTIALS'));
  });

  test('a view with the cookie but not its view key is refused for good (4401, status failed)', async (t) => {
    const { broker } = await startBroker(t);
    const s = await broker.mint();
    const { view } = await openView(t, s.viewUrl, { connect: false, view: { viewKey: undefined } });
    await assert.rejects(view.connect(), (e) => e.closeCode === 4401 && e.code === 'INVALID_CREDENTIALS');
    assert.equal(view.status, 'failed');
  });

  test('a view without the cookie is refused for good (4401, status failed)', async (t) => {
    const { broker } = await startBroker(t);
    const s = await broker.mint();
    const { view, fetch } = await openView(t, s.viewUrl, { connect: false });
    fetch.jar.clear();
    await assert.rejects(view.connect(), (e) => e.closeCode === 4401 && e.code === 'INVALID_CREDENTIALS');
    assert.equal(view.status, 'failed');
  });

  test('reconnect: a lost socket comes back and asks for a snapshot with lastHostSequence', async (t) => {
    const { broker } = await startBroker(t);
    const s = await broker.mint();
    const host = await broker.connectHost(s);
    const { view, sockets } = await openView(t, s.viewUrl, { view: { reconnect: { initialDelayMs: 10 } } });
    for (let i = 1; i <= 3; i++) host.send('focusNode', { nodeId: `n${i}` });
    await stateWhere(view, (st) => st.focusNode?.nodeId === 'n3');
    if (view.stale) await next(view, 'stale', (stale) => stale === false); // the first snapshot
    assert.equal(view.lastHostSequence, 3);
    const firstViewId = view.viewId;

    const statuses = [];
    view.on('status', (st) => statuses.push(st));
    const asked = next(host, 'snapshotRequest', (p) => p.lastHostSequence !== null);
    const fresh = next(view, 'stale', (stale) => stale === false);
    sockets.at(-1).terminate(); // the network drops the view's socket
    const [req] = await asked;
    assert.deepEqual(req, { lastHostSequence: 3 });
    await fresh;
    assert.deepEqual(statuses.slice(0, 2), ['reconnecting', 'open']);
    assert.notEqual(view.viewId, firstViewId);
    assert.equal(sockets.length, 2);
    assert.equal(view.lastHostSequence, 3);

    host.send('focusNode', { nodeId: 'n4' });
    await stateWhere(view, (st) => st.focusNode?.nodeId === 'n4');
    assert.equal(view.lastHostSequence, 4);
  });

  test('stale: the host leaves, a new host starts a new epoch, a snapshot makes the state fresh', async (t) => {
    const { broker } = await startBroker(t);
    const s = await broker.mint();
    let host = await broker.connectHost(s);
    const { view } = await openView(t, s.viewUrl);
    host.send('syncState', { synced: true });
    await stateWhere(view, (st) => st.syncState?.synced === true);
    assert.equal(view.hostEpoch, 1);

    const gone = next(view, 'connectionState', (p) => p.state === 'disconnected');
    await host.close();
    await gone;
    assert.equal(view.stale, true);
    assert.equal(view.hostConnected, false);

    const asked = next(view, 'snapshot');
    host = await broker.connectHost(s);
    assert.equal(host.hostEpoch, 2);
    host.send('syncState', { synced: false });
    await asked;
    await stateWhere(view, (st) => st.syncState?.synced === false);
    assert.equal(view.hostEpoch, 2);
    assert.equal(view.hostConnected, true);
    assert.equal(view.stale, false);
  });

  test('expiry: the view is closed 4402, reaches "expired" and does not reconnect', async (t) => {
    const { broker } = await startBroker(t);
    const s = await broker.mint({ ttlSeconds: 1 });
    let opened;
    try {
      opened = await openView(t, s.viewUrl, { connect: false, view: { reconnect: { initialDelayMs: 0 } } });
    } catch (e) {
      // Too slow for a one-second session: the expiry shows at bootstrap.
      assert.equal(e.status, 410);
      return;
    }
    const { view, sockets } = opened;
    const expired = next(view, 'status', (st) => st === 'expired');
    await view.connect().catch((e) => assert.equal(e.code, 'CREDENTIAL_EXPIRED'));
    if (view.status !== 'expired') await expired;
    assert.equal(view.status, 'expired');
    const dials = sockets.length;
    // A retry would be a timer of delay 0 set before this one: had the view
    // scheduled one, it would have dialled by the time this one fires.
    await new Promise((r) => setTimeout(r, 0));
    assert.equal(sockets.length, dials);
    await assert.rejects(view.validate('x').result, (e) => e.code === 'CONNECTION_CLOSED');
  });
});

describe('view reconnect policy (fake socket)', () => {
  test('backoff: capped exponential with equal jitter', () => {
    const rc = { ...RECONNECT_DEFAULTS };
    assert.equal(backoffDelay(0, rc, () => 0), 125);
    assert.equal(backoffDelay(0, rc, () => 0.999999) < 250, true);
    assert.equal(backoffDelay(3, rc, () => 0), 1000);
    assert.equal(backoffDelay(10, rc, () => 0), 5000);
    assert.equal(backoffDelay(50, rc, () => 1), 10000);
  });

  for (const [code, status] of [[4402, 'expired'], [4401, 'failed'], [4403, 'failed']]) {
    test(`close ${code}: "${status}", no redial`, async () => {
      const fake = fakeSockets();
      const view = new ViewClient({ workspaceSessionId: 'ws_x', baseUrl: 'http://127.0.0.1:1', WebSocket: fake.WS, reconnect: { initialDelayMs: 0 } });
      const p = view.connect();
      fake.last().serverClose(code);
      await assert.rejects(p, (e) => e instanceof AirlockError && e.closeCode === code);
      assert.equal(view.status, status);
      await new Promise((r) => setTimeout(r, 0));
      assert.equal(fake.sockets.length, 1);
    });
  }

  test('1006 and 1013 are retried; maxAttempts bounds the retries', async () => {
    const fake = fakeSockets();
    const view = new ViewClient({ workspaceSessionId: 'ws_x', baseUrl: 'http://127.0.0.1:1', WebSocket: fake.WS, reconnect: { initialDelayMs: 0, maxAttempts: 2 } });
    const p = view.connect();
    fake.last().serverClose(1006);
    await fake.dialled(2);
    fake.last().serverClose(1013);
    await fake.dialled(3);
    fake.last().serverClose(1006);
    await assert.rejects(p, (e) => e.code === 'CONNECTION_CLOSED');
    assert.equal(view.status, 'failed');
  });

  test('one snapshotRequest per host: the connectionState after connected repeats it; a new host is asked again', async () => {
    const fake = fakeSockets();
    const view = new ViewClient({ workspaceSessionId: 'ws_x', baseUrl: 'http://127.0.0.1:1', WebSocket: fake.WS, reconnect: { initialDelayMs: 0 } });
    const p = view.connect();
    const s = fake.last();
    s.serverOpen();
    s.serverSend('connected', { role: 'view', viewId: 'v_1', hostConnected: true, hostEpoch: 1 });
    s.serverSend('connectionState', { state: 'connected', hostEpoch: 1 });
    await p;
    const asks = () => s.sent.filter((m) => m.type === 'snapshotRequest').length;
    assert.equal(asks(), 1);
    s.serverSend('connectionState', { state: 'disconnected', hostEpoch: 1 });
    s.serverSend('connectionState', { state: 'connected', hostEpoch: 2 });
    assert.equal(asks(), 2);
    view.close();
  });

  test('pending requests reject on a loss; the view sends hello then snapshotRequest', async () => {
    const fake = fakeSockets();
    const view = new ViewClient({ workspaceSessionId: 'ws_x', baseUrl: 'http://127.0.0.1:1', WebSocket: fake.WS, reconnect: { initialDelayMs: 0 } });
    const p = view.connect();
    const s = fake.last();
    s.serverOpen();
    s.serverSend('connected', { role: 'view', viewId: 'v_1', hostConnected: true, hostEpoch: 1 });
    await p;
    assert.deepEqual(s.sent.map((m) => m.type), ['hello', 'snapshotRequest']);
    const h = view.validate({ a: 1 });
    assert.deepEqual(s.sent.at(-1).payload, { target: { a: 1 }, requestId: h.requestId });
    assert.match(h.requestId, /^[A-Za-z0-9._:-]{1,128}$/);
    s.serverClose(1006);
    await assert.rejects(h.result, (e) => e.code === 'CONNECTION_CLOSED' && e.requestId === h.requestId);
    view.close();
  });
});

function refused(status, code) {
  return (e) => e instanceof AirlockError && e.status === status && e.code === code;
}

/** A WebSocket stand-in whose server side the test plays. */
function fakeSockets() {
  const sockets = [];
  const waiters = [];
  class FakeSocket {
    readyState = 0;
    onopen = null;
    onmessage = null;
    onclose = null;
    onerror = null;
    sent = [];
    constructor(url) {
      this.url = url;
      sockets.push(this);
      for (const w of waiters.splice(0)) w();
    }
    send(text) {
      this.sent.push(JSON.parse(text));
    }
    close() {
      this.readyState = 3;
    }
    serverOpen() {
      this.readyState = 1;
      this.onopen?.({});
    }
    serverSend(type, payload) {
      this.onmessage?.({ data: JSON.stringify({ protocolVersion: 1, workspaceSessionId: 'ws_x', type, payload }) });
    }
    serverClose(code) {
      this.readyState = 3;
      this.onclose?.({ code, reason: '' });
    }
  }
  return {
    WS: FakeSocket,
    sockets,
    last: () => sockets.at(-1),
    dialled: (n) => (sockets.length >= n ? Promise.resolve() : new Promise((r) => waiters.push(() => (sockets.length >= n ? r() : waiters.push(r))))),
  };
}
