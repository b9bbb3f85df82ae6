// What the broker's built-in view page renders of the host state (README,
// "What the built-in view renders"). The contract lets host state be any
// object (PROTOCOL section 4.5); these are the shapes the page shows, so a
// host written for it can type what it sends, and viewStateNotes names
// what the page cannot show, which it displays as a note instead of
// failing silently. No runtime dependency: the page imports this module.
/** How much of a projection the page shows. */
export const VIEW_LIMITS = { nodes: 500, edges: 2000 };
/** At most this many notes are returned; one more says how many were left out. */
const MAX_NOTES = 8;
/** kind names a value's JSON type for a note, never the value itself. */
function kind(v) {
    if (v === null)
        return "null";
    if (Array.isArray(v))
        return "an array";
    if (typeof v === "object")
        return "an object";
    if (typeof v === "string")
        return "a string";
    if (typeof v === "number")
        return "a number";
    if (typeof v === "boolean")
        return "a boolean";
    return typeof v;
}
function isObject(v) {
    return v !== null && typeof v === "object" && !Array.isArray(v);
}
/**
 * viewStateNotes lists, one short line each, what of state the built-in
 * page cannot render, such as "focusNode: nodeId must be a string, got a
 * number". A note names fields, indexes and JSON types only, never a value
 * the host sent, so it is safe to show as text. Empty when everything
 * renders.
 */
export function viewStateNotes(state) {
    const notes = [];
    if (!isObject(state))
        return [`state must be an object, got ${kind(state)}`];
    const strings = (type, v, fields) => {
        for (const f of fields) {
            if (isObject(v) && v[f] !== undefined && typeof v[f] !== "string")
                notes.push(`${type}: ${f} must be a string, got ${kind(v[f])}`);
        }
    };
    const object = (type) => {
        const v = state[type];
        if (v !== undefined && !isObject(v))
            notes.push(`${type}: must be an object, got ${kind(v)}`);
        return v;
    };
    strings("activeTarget", object("activeTarget"), ["file", "symbol"]);
    strings("syncState", object("syncState"), ["state", "at"]);
    const ids = new Set();
    const proj = object("projection");
    if (isObject(proj)) {
        strings("projection", proj, ["file"]);
        const nodes = proj.nodes;
        if (nodes !== undefined && !Array.isArray(nodes))
            notes.push(`projection: nodes must be an array, got ${kind(nodes)}`);
        if (Array.isArray(nodes)) {
            if (nodes.length > VIEW_LIMITS.nodes)
                notes.push(`projection: ${nodes.length} nodes, the first ${VIEW_LIMITS.nodes} shown`);
            nodes.slice(0, VIEW_LIMITS.nodes).forEach((n, i) => {
                if (!isObject(n))
                    notes.push(`projection: nodes[${i}] must be an object, got ${kind(n)}`);
                else if (typeof n.id !== "string")
                    notes.push(`projection: nodes[${i}].id must be a string, got ${kind(n.id)}; the node is not shown`);
                else {
                    ids.add(n.id);
                    if (n.label !== undefined && typeof n.label !== "string")
                        notes.push(`projection: nodes[${i}].label must be a string, got ${kind(n.label)}`);
                    if (n.line !== undefined && typeof n.line !== "number")
                        notes.push(`projection: nodes[${i}].line must be a number, got ${kind(n.line)}`);
                }
            });
        }
        const edges = proj.edges;
        if (edges !== undefined && !Array.isArray(edges))
            notes.push(`projection: edges must be an array, got ${kind(edges)}`);
        if (Array.isArray(edges)) {
            if (edges.length > VIEW_LIMITS.edges)
                notes.push(`projection: ${edges.length} edges, the first ${VIEW_LIMITS.edges} shown`);
            edges.slice(0, VIEW_LIMITS.edges).forEach((e, i) => {
                if (!isObject(e))
                    notes.push(`projection: edges[${i}] must be an object, got ${kind(e)}`);
                else
                    for (const f of ["from", "to"]) {
                        if (typeof e[f] !== "string")
                            notes.push(`projection: edges[${i}].${f} must be a string, got ${kind(e[f])}; the edge is not shown`);
                    }
            });
        }
    }
    const focus = object("focusNode");
    if (isObject(focus)) {
        if (focus.nodeId === undefined)
            notes.push("focusNode: nodeId is missing");
        else if (typeof focus.nodeId !== "string")
            notes.push(`focusNode: nodeId must be a string, got ${kind(focus.nodeId)}`);
        else if (ids.size && !ids.has(focus.nodeId))
            notes.push("focusNode: nodeId names no node of the projection");
    }
    if (notes.length > MAX_NOTES)
        return [...notes.slice(0, MAX_NOTES), `and ${notes.length - MAX_NOTES} more`];
    return notes;
}
