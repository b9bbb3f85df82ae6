// quickstart.mjs: AIRLOCK_BIN=/path/to/airlock node quickstart.mjs
import { launch, openNodeView } from '@airlock/client/host';

// 1. Launch the broker: port 0, a fresh launch token in its environment.
const broker = await launch({ bin: process.env.AIRLOCK_BIN ?? 'airlock', args: ['--no-builtin'] });

// 2. Mint a session; viewUrl is what a browser opens.
const session = await broker.mint({ ttlSeconds: 600 });
console.log('view URL:', session.viewUrl);

// 3. The host socket: send state (hostSequence is kept for you) and answer requests.
const host = await broker.connectHost(session);
host.send('activeTarget', { file: 'model.py' });
host.send('focusNode', { nodeId: 'encoder' });
host.on('request', (req) => {
  if (req.family === 'validate') req.result({ valid: true });
});

// 4. The view side (here from Node; in a page, @airlock/client/view).
const view = await openNodeView(session.viewUrl);
await new Promise((resolve) => view.once('snapshot', resolve));
console.log('view sees', view.state, 'at hostSequence', view.lastHostSequence);
const answer = await view.validate({ file: 'model.py' }).result;
console.log('validate answered', answer);

// 5. Shut down: close the sockets, SIGTERM the broker, wait for exit 0.
view.close();
await host.close();
await broker.shutdown();
