#!/usr/bin/env node
// An example extension host: it launches the broker, mints a workspace
// session, prints the view URL, and animates host state (a focusNode every
// second) while answering snapshots and every kind of view request, until
// Ctrl-C. Run from broker/jsclient:
//
//   AIRLOCK_BIN=/path/to/airlock node examples/extension-host/main.mjs
//
// then open the printed URL in a browser. The URL holds the session's
// one-time view credential (as `airlock mint` prints it): treat the output
// as a secret. Environment: AIRLOCK_BIN (the
// binary; default "airlock" on PATH), EXAMPLE_TICK_MS (default 1000),
// EXAMPLE_TTL_SECONDS (default 3600). The broker's own settings pass
// through (AIRLOCK_DATA, ...).

import { launch } from '@airlock/client/host';

const tickMs = Number(process.env.EXAMPLE_TICK_MS ?? 1000);
const nodes = ['input', 'encoder', 'attention', 'mlp', 'output'];

const broker = await launch({
  bin: process.env.AIRLOCK_BIN ?? 'airlock',
  args: ['--no-builtin'],
  onLog: (line) => {
    if (process.env.EXAMPLE_VERBOSE) console.error(line);
  },
});
const session = await broker.mint({ ttlSeconds: Number(process.env.EXAMPLE_TTL_SECONDS ?? 3600), canProposeSourceEdits: true });
console.log(`broker ${broker.baseUrl} (pid ${broker.pid})`);
console.log(`view: ${session.viewUrl}`);

// The default snapshot is the last payload of each ordered type sent, at
// the current hostSequence: nothing to write for it.
const host = await broker.connectHost(session);
host.on('viewState', (p) => console.log(`view ${p.viewId} ${p.state}`));
host.on('revealNode', (p) => console.log(`reveal ${p.nodeId}`));
host.on('refusal', (e) => console.error(`refused: ${e.code} ${e.detail}`));
host.on('cancel', (req, p) => console.log(`cancelled ${req.family} ${req.requestId}${p.reason ? ` (${p.reason})` : ''}`));
host.on('request', (req) => {
  console.log(`request ${req.family} ${req.requestId}`);
  switch (req.family) {
    case 'validate':
      req.result({ valid: true, checkedAt: new Date().toISOString() });
      break;
    case 'captureInspect':
      req.result({ capture: { node: req.target, shape: [1, 16] } });
      break;
    case 'export':
      req.result({ format: 'json', body: JSON.stringify(host.state) });
      break;
    case 'sourceEdit':
      req.progress({ diff: `--- ${String(req.target)}\n+++ proposed` });
      req.result({ applied: false, why: 'the example only proposes' });
      break;
    case 'graphPublish':
      req.progress({ phase: 'uploading' });
      req.result({ status: 'failed', why: 'the example does not publish' });
      break;
    case 'candidate':
      req.result({ candidates: nodes });
      break;
  }
});

let tick = 0;
const animate = () => {
  const nodeId = nodes[tick % nodes.length];
  host.send('focusNode', { nodeId, tick });
  if (tick % nodes.length === 0) host.send('syncState', { round: tick / nodes.length });
  tick++;
};
host.send('activeTarget', { file: 'model.py', graph: 'demo' });
animate();
const timer = setInterval(animate, tickMs);

host.on('close', (info) => {
  if (stopping) return;
  console.error(`host socket closed ${info.code}${info.error ? ` ${info.error.code}` : ''}`);
  void stop(1);
});

let stopping = false;
async function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  clearInterval(timer);
  await host.close();
  try {
    await broker.shutdown();
  } catch (e) {
    console.error(e.message);
    code = 1;
  }
  console.log('stopped');
  process.exitCode = code;
}
process.once('SIGINT', () => void stop());
process.once('SIGTERM', () => void stop());
