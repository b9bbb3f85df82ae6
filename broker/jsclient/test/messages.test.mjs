// The message map and the client's own decoders: the table covers exactly
// the types of PROTOCOL section 4 with their senders, close and error codes
// pair 1:1, and decodeEnvelope and parseFragment never throw and accept
// only what they promise, over seeded random inputs and mutations.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  AirlockError, CloseCode, ErrorCode, FAMILIES, MESSAGES, MESSAGE_TYPES, ORDERED_TYPES,
  closeCodeOfError, decodeEnvelope, encodeEnvelope, errorCodeOfClose, isExpired,
} from '@airlock/client/messages';
import { parseFragment } from '@airlock/client/view';

test('the table holds the 33 types of PROTOCOL section 4, with their senders', () => {
  assert.equal(MESSAGE_TYPES.length, 33);
  const from = (role) => MESSAGE_TYPES.filter((t) => MESSAGES[t].from.includes(role)).sort();
  assert.deepEqual(from('broker'), ['connected', 'connectionState', 'error', 'viewState']);
  assert.deepEqual(MESSAGE_TYPES.filter((t) => MESSAGES[t].ordered).sort(), [...ORDERED_TYPES].sort());
  for (const [family, f] of Object.entries(FAMILIES)) {
    assert.equal(MESSAGES[f.request].family, family);
    assert.deepEqual(MESSAGES[f.request].from, ['view']);
    assert.deepEqual(MESSAGES[f.result].from, ['host']);
    if (f.cancel) assert.equal(MESSAGES[f.cancel].kind, 'cancel');
    if (f.progress) assert.equal(MESSAGES[f.progress].kind, 'progress');
  }
});

test('close codes and error codes pair 1:1', () => {
  for (const [name, code] of Object.entries(CloseCode)) {
    if (code < 4400) {
      assert.equal(errorCodeOfClose(code), undefined);
      continue;
    }
    assert.equal(errorCodeOfClose(code), ErrorCode[name]);
    assert.equal(closeCodeOfError(ErrorCode[name]), code);
  }
  assert.equal(closeCodeOfError('NOT_FOUND'), undefined);
  const e = AirlockError.fromClose(4402, 'CREDENTIAL_EXPIRED');
  assert.equal(e.code, 'CREDENTIAL_EXPIRED');
  assert.ok(isExpired(e));
  assert.equal(AirlockError.fromClose(1006, '').code, 'CONNECTION_CLOSED');
  assert.equal(AirlockError.fromFrame({ message: 'relayed' }), undefined);
});

test('encodeEnvelope writes hostSequence only when given', () => {
  assert.equal(encodeEnvelope('ws_a', 'ack', {}), '{"protocolVersion":1,"workspaceSessionId":"ws_a","type":"ack","payload":{}}');
  assert.equal(JSON.parse(encodeEnvelope('ws_a', 'focusNode', { n: 1 }, 7)).hostSequence, 7);
});

test('decodeEnvelope and parseFragment never throw, and accept only their shapes', () => {
  let seed = 42;
  const rand = (n) => ((seed = (seed * 1103515245 + 12345) % 2147483648) % n);
  const alphabet = '{}[]":,.#0123456789abcnulltrue \\u00e9\u2028xX-_';
  const valid = MESSAGE_TYPES.map((t) => encodeEnvelope('ws_a', t, { requestId: 'r1', target: 1 }, 1));
  for (let i = 0; i < 20000; i++) {
    let s;
    if (i % 2) {
      s = '';
      for (let j = rand(40); j > 0; j--) s += alphabet[rand(alphabet.length)];
    } else {
      const a = [...valid[rand(valid.length)]];
      for (let j = 1 + rand(4); j > 0; j--) a[rand(a.length)] = alphabet[rand(alphabet.length)];
      s = a.join('');
    }
    const env = decodeEnvelope(s);
    if (env !== undefined) {
      assert.ok(Object.hasOwn(MESSAGES, env.type), s);
      assert.equal(typeof env.payload, 'object', s);
      assert.ok(env.payload !== null && !Array.isArray(env.payload), s);
    }
    const f = parseFragment(s);
    if (f !== undefined) {
      assert.ok(f.workspaceSessionId.length > 0 && f.viewCredential.length > 0, s);
      assert.ok(!f.workspaceSessionId.includes('.'), s);
    }
  }
  assert.equal(decodeEnvelope('{"type":"__proto__","payload":{}}'), undefined);
  assert.equal(decodeEnvelope('{"type":"toString","payload":{}}'), undefined);
  assert.equal(decodeEnvelope('{"type":"ack","payload":[]}'), undefined);
  assert.deepEqual(parseFragment('#ws_a.cred.with.dots'), { workspaceSessionId: 'ws_a', viewCredential: 'cred.with.dots' });
  assert.equal(parseFragment('#.x'), undefined);
  assert.equal(parseFragment('#x.'), undefined);
});
