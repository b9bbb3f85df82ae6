// What the broker's built-in view page renders of the host state (README,
// "What the built-in view renders"). The contract lets host state be any
// object (PROTOCOL section 4.5); these are the shapes the page shows, so a
// host written for it can type what it sends, and viewStateNotes names
// what the page cannot show, which it displays as a note instead of
// failing silently. No runtime dependency: the page imports this module.

/** activeTarget: shown as "file · symbol"; the whole object is the target of every request. */
export interface ViewActiveTarget {
  file?: string;
  symbol?: string;
  [key: string]: unknown;
}

/** One node of the graph: a button labelled `label` (else `id`), with "line N". */
export interface ViewProjectionNode {
  /** Unique; what focusNode.nodeId, revealNode and candidates name. */
  id: string;
  label?: string;
  line?: number;
  [key: string]: unknown;
}

/** One edge, shown as "→ to" beside its `from` node. */
export interface ViewProjectionEdge {
  from: string;
  to: string;
  [key: string]: unknown;
}

/** projection: the graph, its first VIEW_LIMITS.nodes nodes and VIEW_LIMITS.edges edges. */
export interface ViewProjection {
  file?: string;
  nodes?: ViewProjectionNode[];
  edges?: ViewProjectionEdge[];
  [key: string]: unknown;
}

/** syncState: shown as "state at at". */
export interface ViewSyncState {
  state?: string;
  /** A time, shown as sent (e.g. RFC 3339). */
  at?: string;
  [key: string]: unknown;
}

/** focusNode: the node whose id is nodeId is marked focused. */
export interface ViewFocusNode {
  nodeId: string;
  [key: string]: unknown;
}

/**
 * The host state the built-in page renders: the latest payload of each
 * ordered type (a snapshot's `state` has the same keys). staleState is
 * shown as its JSON.
 */
export interface ViewState {
  activeTarget?: ViewActiveTarget;
  projection?: ViewProjection;
  syncState?: ViewSyncState;
  staleState?: unknown;
  focusNode?: ViewFocusNode;
  [key: string]: unknown;
}

/** How much of a projection the page shows. */
export const VIEW_LIMITS = { nodes: 500, edges: 2000 } as const;

/** At most this many notes are returned; one more says how many were left out. */
const MAX_NOTES = 8;

/** kind names a value's JSON type for a note, never the value itself. */
function kind(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "object") return "an object";
  if (typeof v === "string") return "a string";
  if (typeof v === "number") return "a number";
  if (typeof v === "boolean") return "a boolean";
  return typeof v;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/**
 * viewStateNotes lists, one short line each, what of state the built-in
 * page cannot render, such as "focusNode: nodeId must be a string, got a
 * number". A note names fields, indexes and JSON types only, never a value
 * the host sent, so it is safe to show as text. Empty when everything
 * renders.
 */
export function viewStateNotes(state: unknown): string[] {
  const notes: string[] = [];
  if (!isObject(state)) return [`state must be an object, got ${kind(state)}`];
  const strings = (type: string, v: unknown, fields: string[]) => {
    for (const f of fields) {
      if (isObject(v) && v[f] !== undefined && typeof v[f] !== "string") notes.push(`${type}: ${f} must be a string, got ${kind(v[f])}`);
    }
  };
  const object = (type: string): unknown => {
    const v = state[type];
    if (v !== undefined && !isObject(v)) notes.push(`${type}: must be an object, got ${kind(v)}`);
    return v;
  };

  strings("activeTarget", object("activeTarget"), ["file", "symbol"]);
  strings("syncState", object("syncState"), ["state", "at"]);

  const ids = new Set<string>();
  const proj = object("projection");
  if (isObject(proj)) {
    strings("projection", proj, ["file"]);
    const nodes = proj.nodes;
    if (nodes !== undefined && !Array.isArray(nodes)) notes.push(`projection: nodes must be an array, got ${kind(nodes)}`);
    if (Array.isArray(nodes)) {
      if (nodes.length > VIEW_LIMITS.nodes) notes.push(`projection: ${nodes.length} nodes, the first ${VIEW_LIMITS.nodes} shown`);
      nodes.slice(0, VIEW_LIMITS.nodes).forEach((n: unknown, i) => {
        if (!isObject(n)) notes.push(`projection: nodes[${i}] must be an object, got ${kind(n)}`);
        else if (typeof n.id !== "string") notes.push(`projection: nodes[${i}].id must be a string, got ${kind(n.id)}; the node is not shown`);
        else {
          ids.add(n.id);
          if (n.label !== undefined && typeof n.label !== "string") notes.push(`projection: nodes[${i}].label must be a string, got ${kind(n.label)}`);
          if (n.line !== undefined && typeof n.line !== "number") notes.push(`projection: nodes[${i}].line must be a number, got ${kind(n.line)}`);
        }
      });
    }
    const edges = proj.edges;
    if (edges !== undefined && !Array.isArray(edges)) notes.push(`projection: edges must be an array, got ${kind(edges)}`);
    if (Array.isArray(edges)) {
      if (edges.length > VIEW_LIMITS.edges) notes.push(`projection: ${edges.length} edges, the first ${VIEW_LIMITS.edges} shown`);
      edges.slice(0, VIEW_LIMITS.edges).forEach((e: unknown, i) => {
        if (!isObject(e)) notes.push(`projection: edges[${i}] must be an object, got ${kind(e)}`);
        else
          for (const f of ["from", "to"]) {
            if (typeof e[f] !== "string") notes.push(`projection: edges[${i}].${f} must be a string, got ${kind(e[f])}; the edge is not shown`);
          }
      });
    }
  }

  const focus = object("focusNode");
  if (isObject(focus)) {
    if (focus.nodeId === undefined) notes.push("focusNode: nodeId is missing");
    else if (typeof focus.nodeId !== "string") notes.push(`focusNode: nodeId must be a string, got ${kind(focus.nodeId)}`);
    else if (ids.size && !ids.has(focus.nodeId)) notes.push("focusNode: nodeId names no node of the projection");
  }

  if (notes.length > MAX_NOTES) return [...notes.slice(0, MAX_NOTES), `and ${notes.length - MAX_NOTES} more`];
  return notes;
}
