// The built-in Airlock view page. It reads "#<workspaceSessionId>.<viewCredential>"
// from the URL fragment, clears the fragment at once, trades the credential
// for the view cookie (POST /local/bootstrap, same origin), then opens
// /local/ws, says hello and shows what the host relays. Everything is
// rendered with textContent: nothing the host sends is ever parsed as HTML.
'use strict';
(function () {
  const PROTOCOL_VERSION = 1;
  const ORDERED = ['activeTarget', 'projection', 'syncState', 'staleState', 'focusNode'];
  const $ = (id) => document.getElementById(id);
  let sid = null;
  let lastSeq = null;

  function show(id, text, attr, value) {
    const el = $(id);
    el.textContent = text;
    if (attr) el.dataset[attr] = value;
  }

  function log(line) {
    const li = document.createElement('li');
    li.textContent = line;
    const list = $('log');
    list.prepend(li);
    while (list.children.length > 200) list.lastChild.remove();
  }

  // takeFragment returns the credential pair and removes it from the URL so
  // it is not kept in history, bookmarks or a copied address.
  function takeFragment() {
    const frag = location.hash.slice(1);
    if (location.hash) history.replaceState(null, '', location.pathname + location.search);
    const dot = frag.indexOf('.');
    if (dot <= 0 || dot === frag.length - 1) return null;
    return { sid: frag.slice(0, dot), cred: frag.slice(dot + 1) };
  }

  async function bootstrap(pair) {
    show('phase', 'bootstrapping', 'phase', 'bootstrapping');
    let res;
    try {
      res = await fetch('/local/bootstrap', {
        method: 'POST',
        credentials: 'same-origin',
        cache: 'no-store',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ workspaceSessionId: pair.sid, viewCredential: pair.cred }),
      });
    } catch (e) {
      show('phase', 'bootstrap failed: network', 'phase', 'failed');
      return false;
    }
    const body = await res.json().catch(() => ({}));
    if (!res.ok) {
      const code = (body.error && body.error.code) || String(res.status);
      show('phase', 'bootstrap refused: ' + code, 'phase', 'refused');
      return false;
    }
    sessionStorage.setItem('airlock.sid', body.workspaceSessionId);
    show('expires', body.expiresAt);
    return true;
  }

  function send(ws, type, payload) {
    ws.send(JSON.stringify({ protocolVersion: PROTOCOL_VERSION, workspaceSessionId: sid, type, payload }));
  }

  function render(type, payload) {
    let dd = document.querySelector('dd[data-type="' + type + '"]');
    if (!dd) {
      const dt = document.createElement('dt');
      dt.textContent = type;
      dd = document.createElement('dd');
      dd.dataset.type = type;
      $('state').append(dt, dd);
    }
    dd.textContent = JSON.stringify(payload);
  }

  function onMessage(ws, m) {
    const p = m.payload || {};
    switch (m.type) {
      case 'connected':
        show('viewId', p.viewId);
        show('epoch', String(p.hostEpoch));
        return;
      case 'connectionState':
        show('host', p.state, 'state', p.state);
        show('epoch', String(p.hostEpoch));
        if (p.state === 'connected') send(ws, 'snapshotRequest', { lastHostSequence: lastSeq });
        return;
      case 'snapshot':
        for (const [k, v] of Object.entries(p.state || {})) render(k, v);
        lastSeq = p.atHostSequence;
        show('seq', String(lastSeq));
        return;
      case 'error':
        log('error ' + (p.code || '') + ' ' + (p.detail || p.message || ''));
        return;
    }
    if (ORDERED.includes(m.type)) {
      render(m.type, p);
      lastSeq = m.hostSequence;
      show('seq', String(lastSeq));
      return;
    }
    log(m.type + (p.requestId ? ' ' + p.requestId : ''));
  }

  function connect() {
    const scheme = location.protocol === 'https:' ? 'wss://' : 'ws://';
    const ws = new WebSocket(scheme + location.host + '/local/ws');
    show('conn', 'connecting', 'state', 'connecting');
    ws.onopen = () => {
      show('conn', 'open', 'state', 'open');
      send(ws, 'hello', {});
    };
    ws.onmessage = (ev) => {
      let m;
      try { m = JSON.parse(ev.data); } catch (e) { return; }
      onMessage(ws, m);
    };
    ws.onclose = (ev) => {
      show('conn', 'closed ' + ev.code + (ev.reason ? ' ' + ev.reason : ''), 'state', 'closed');
      $('conn').dataset.code = String(ev.code);
      show('host', 'disconnected', 'state', 'disconnected');
    };
  }

  async function start() {
    const pair = takeFragment();
    if (pair && !(await bootstrap(pair))) return;
    sid = sessionStorage.getItem('airlock.sid');
    if (!sid) {
      show('phase', 'no credential: open the URL that airlock mint printed', 'phase', 'missing');
      return;
    }
    show('session', sid);
    show('phase', 'ready', 'phase', 'ready');
    connect();
  }

  start();
})();
