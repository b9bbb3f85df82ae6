// What the built-in view page cannot render of the host state: each
// shape it reads, named by field and JSON type, never by value.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { VIEW_LIMITS, viewStateNotes } from '@airlock/client/view-state';

const good = {
  activeTarget: { file: 'model.py', symbol: 'Net', extra: [1] },
  projection: { file: 'model.py', nodes: [{ id: 'a', label: 'a', line: 1 }, { id: 'b' }], edges: [{ from: 'a', to: 'b' }] },
  syncState: { state: 'synced', at: '2026-12-01T12:00:00Z' },
  staleState: 42,
  focusNode: { nodeId: 'a', revealed: true },
};

test('state the page renders has no notes', () => {
  assert.deepEqual(viewStateNotes(good), []);
  assert.deepEqual(viewStateNotes({}), []);
});

test('each shape the page cannot render is named', () => {
  const cases = [
    [{ focusNode: { nodeId: 42 } }, 'focusNode: nodeId must be a string, got a number'],
    [{ focusNode: {} }, 'focusNode: nodeId is missing'],
    [{ focusNode: 'a' }, 'focusNode: must be an object, got a string'],
    [{ ...good, focusNode: { nodeId: 'zz' } }, 'focusNode: nodeId names no node of the projection'],
    [{ activeTarget: [] }, 'activeTarget: must be an object, got an array'],
    [{ activeTarget: { file: 1 } }, 'activeTarget: file must be a string, got a number'],
    [{ syncState: { at: null } }, 'syncState: at must be a string, got null'],
    [{ projection: { nodes: {} } }, 'projection: nodes must be an array, got an object'],
    [{ projection: { nodes: [{ id: 1 }] } }, 'projection: nodes[0].id must be a string, got a number; the node is not shown'],
    [{ projection: { nodes: [{ id: 'a', line: '3' }] } }, 'projection: nodes[0].line must be a number, got a string'],
    [{ projection: { edges: [{ from: 'a' }] } }, 'projection: edges[0].to must be a string, got undefined; the edge is not shown'],
    [{ projection: { nodes: Array.from({ length: VIEW_LIMITS.nodes + 1 }, (_, i) => ({ id: `n${i}` })) } }, `projection: ${VIEW_LIMITS.nodes + 1} nodes, the first ${VIEW_LIMITS.nodes} shown`],
    [null, 'state must be an object, got null'],
  ];
  for (const [state, want] of cases) assert.deepEqual(viewStateNotes(state), [want], JSON.stringify(state)?.slice(0, 80));
});

test('notes never carry a value and are bounded', () => {
  const value = '<b>' + 'x'.repeat(5000);
  const notes = viewStateNotes({ activeTarget: { file: 1 }, projection: { nodes: Array(50).fill({ id: 1, label: value }) }, focusNode: { nodeId: value } });
  assert.equal(notes.length, 9);
  assert.equal(notes[8], `and ${1 + 50 - 8} more`);
  for (const n of notes) assert.ok(n.length < 120 && !n.includes('<b>') && !n.includes('xx'), n);
});
