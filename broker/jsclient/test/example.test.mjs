// The example extension host (examples/extension-host/main.mjs), run as a
// user would: it prints a view URL; a view bootstrapped from it sees the
// animated state and gets answers; SIGINT stops it and its broker, exit 0.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { BIN, dataDir, next, openView, skip, stateWhere, timeout } from './support/local.mjs';

const main = fileURLToPath(new URL('../examples/extension-host/main.mjs', import.meta.url));

test('example extension host: view URL, animated state, answers, clean stop', { skip, timeout }, async (t) => {
  const { dir, cleanup } = await dataDir();
  t.after(cleanup);
  const child = spawn(process.execPath, [main], {
    env: { ...process.env, AIRLOCK_BIN: BIN, AIRLOCK_DATA: dir, EXAMPLE_TICK_MS: '50' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit');
  t.after(() => child.exitCode === null && child.kill('SIGKILL'));
  const out = createInterface({ input: child.stdout });
  const lines = [];
  const viewUrl = await new Promise((resolve, reject) => {
    out.on('line', (l) => {
      lines.push(l);
      const m = /^view: (\S+)$/.exec(l);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`example exited ${code} before printing the view URL`)));
  });
  assert.match(viewUrl, /^http:\/\/127\.0\.0\.1:\d+\/local\/view#ws_[^.]+\..+$/);

  const { view } = await openView(t, viewUrl);
  // Live frames may come before the snapshot; the snapshot holds activeTarget.
  if (view.stale) await next(view, 'stale', (stale) => stale === false);
  const first = await stateWhere(view, (st) => typeof st.focusNode?.tick === 'number');
  const tick = first.focusNode.tick;
  await stateWhere(view, (st) => st.focusNode.tick > tick);
  assert.deepEqual(view.state.activeTarget, { file: 'model.py', graph: 'demo' });
  assert.ok(view.lastHostSequence > 1);

  const v = await view.validate({ node: 'mlp' }).result;
  assert.equal(v.valid, true);
  const c = await view.candidate().result;
  assert.equal(c.candidates.length, 5);

  const hostGone = next(view, 'connectionState', (p) => p.state === 'disconnected');
  child.kill('SIGINT');
  const [code] = await exited;
  assert.equal(code, 0);
  await Promise.race([hostGone, next(view, 'status', (s) => s !== 'open')]);
  assert.ok(lines.includes('stopped'));
});

test('README quick start: broker/jsclient/README.md shows examples/quickstart/main.mjs, and it runs', { skip, timeout }, async (t) => {
  const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
  const file = await readFile(fileURLToPath(new URL('../examples/quickstart/main.mjs', import.meta.url)), 'utf8');
  const block = /```js\n(\/\/ quickstart\.mjs[\s\S]*?)```/.exec(readme);
  assert.ok(block, 'broker/jsclient/README.md has the quick start block');
  assert.equal(block[1], file, 'broker/jsclient/README.md and examples/quickstart/main.mjs differ');

  const { dir, cleanup } = await dataDir();
  t.after(cleanup);
  const child = spawn(process.execPath, [fileURLToPath(new URL('../examples/quickstart/main.mjs', import.meta.url))], {
    env: { ...process.env, AIRLOCK_BIN: BIN, AIRLOCK_DATA: dir },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => child.exitCode === null && child.kill('SIGKILL'));
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d) => (out += d));
  const [code] = await once(child, 'exit');
  assert.equal(code, 0);
  assert.match(out, /view sees .*activeTarget/s);
  assert.match(out, /validate answered .*valid: true/s);
});
