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
export declare const VIEW_LIMITS: {
    readonly nodes: 500;
    readonly edges: 2000;
};
/**
 * viewStateNotes lists, one short line each, what of state the built-in
 * page cannot render, such as "focusNode: nodeId must be a string, got a
 * number". A note names fields, indexes and JSON types only, never a value
 * the host sent, so it is safe to show as text. Empty when everything
 * renders.
 */
export declare function viewStateNotes(state: unknown): string[];
