/**
 * One /local/ws frame (PROTOCOL section 4), in either direction: the envelope with the payload of its type. Use $defs/Hello for the first frame, then $defs/FromHost or $defs/FromView for what a host or a view sends, $defs/ToHost or $defs/ToView for what it receives.
 */
export type LocalMessage = Hello | FromHost | FromView | ToHost | ToView;
/**
 * The relay protocol version, the integer 1 written as 1.
 */
export type ProtocolVersion = 1;
/**
 * The session of the socket; a frame naming another session is refused SESSION_MISMATCH (checked in code: it depends on the socket).
 */
export type WorkspaceSessionId = string;
/**
 * What a host may send after the handshake (a host sends Hello first).
 */
export type FromHost = RelayedErrorMessage | ActiveTarget | Projection | SyncState | StaleState | FocusNode | Ack | Snapshot | SourceEditReview | SourceEditResult | ValidateResult | CaptureInspectResult | ExportResult | GraphPublishState | GraphPublishResult | CandidateResult;
/**
 * Orders host state within a host epoch: each ordered message carries one greater than the last relayed (the order is checked in code, across frames).
 */
export type HostSequence = number;
/**
 * 1 to 128 characters of [A-Za-z0-9._:-] (PROTOCOL section 4.5).
 */
export type RequestId = string;
/**
 * What a request is about: any JSON value but null. Replies are matched to requests by its canonical JSON.
 */
export type Target = {
    [k: string]: unknown;
} | unknown[] | string | number | boolean;
/**
 * An absolute http or https URL with a host and no userinfo (the rest of the URL grammar is checked in code).
 */
export type HttpUrl = string;
/**
 * A view's id as the broker made it. In a view's own request it must be the sender's (checked in code).
 */
export type ViewId = string;
/**
 * What a view may send after the handshake (a view sends Hello first).
 */
export type FromView = RelayedErrorMessage | Ack | SnapshotRequest | RevealNode | SourceEditRequest | SourceEditCancel | ValidateRequest | ValidateCancel | CaptureInspectRequest | CaptureInspectCancel | ExportRequest | ExportCancel | GraphPublishRequest | GraphPublishCancel | CandidateRequest;
/**
 * What a host receives: the broker's messages and what views send.
 */
export type ToHost = Connected | ViewState | ErrorMessage | Ack | SnapshotRequest | RevealNode | SourceEditRequest | SourceEditCancel | ValidateRequest | ValidateCancel | CaptureInspectRequest | CaptureInspectCancel | ExportRequest | ExportCancel | GraphPublishRequest | GraphPublishCancel | CandidateRequest;
/**
 * The broker's answer to hello (PROTOCOL section 4.3).
 */
export type ConnectedPayload = HostConnectedPayload | ViewConnectedPayload;
/**
 * Counts host connections of the session; a new host starts a new epoch.
 */
export type HostEpoch = number;
export type ConnectionWord = "connected" | "disconnected";
/**
 * From the broker: code and detail; relayed from a host or view: message.
 */
export type ErrorPayload = RelayedErrorPayload | BrokerErrorPayload;
/**
 * The error codes of /local/ws, each with its close code (PROTOCOL section 4.4).
 */
export type SocketCode = "INVALID_CREDENTIALS" | "CREDENTIAL_EXPIRED" | "INVALID_ORIGIN" | "PROTOCOL_VERSION_MISMATCH" | "SESSION_MISMATCH" | "INVALID_MESSAGE" | "UNKNOWN_MESSAGE" | "HOST_ALREADY_CONNECTED";
/**
 * What a view receives: the broker's messages and what the host sends.
 */
export type ToView = Connected | ConnectionState | ErrorMessage | ActiveTarget | Projection | SyncState | StaleState | FocusNode | Ack | Snapshot | SourceEditReview | SourceEditResult | ValidateResult | CaptureInspectResult | ExportResult | GraphPublishState | GraphPublishResult | CandidateResult;
/**
 * hello (host or view -> broker, first frame only).
 */
export interface Hello {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "hello";
    payload: HelloPayload;
}
/**
 * Empty: the handshake message a host or view sends first (PROTOCOL section 4.3).
 */
export interface HelloPayload {
    [k: string]: unknown;
}
/**
 * error (host -> every view; view -> host).
 */
export interface RelayedErrorMessage {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "error";
    payload: RelayedErrorPayload;
}
/**
 * An error a host sends to every view, or a view to the host.
 */
export interface RelayedErrorPayload {
    message: string;
    [k: string]: unknown;
}
/**
 * activeTarget (host -> every view, ordered).
 */
export interface ActiveTarget {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "activeTarget";
    payload: ActiveTargetPayload;
    hostSequence: HostSequence;
}
/**
 * Host state: any object, ordered by hostSequence.
 */
export interface ActiveTargetPayload {
    [k: string]: unknown;
}
/**
 * projection (host -> every view, ordered).
 */
export interface Projection {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "projection";
    payload: ProjectionPayload;
    hostSequence: HostSequence;
}
/**
 * Host state: any object, ordered by hostSequence.
 */
export interface ProjectionPayload {
    [k: string]: unknown;
}
/**
 * syncState (host -> every view, ordered).
 */
export interface SyncState {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "syncState";
    payload: SyncStatePayload;
    hostSequence: HostSequence;
}
/**
 * Host state: any object, ordered by hostSequence.
 */
export interface SyncStatePayload {
    [k: string]: unknown;
}
/**
 * staleState (host -> every view, ordered).
 */
export interface StaleState {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "staleState";
    payload: StaleStatePayload;
    hostSequence: HostSequence;
}
/**
 * Host state: any object, ordered by hostSequence.
 */
export interface StaleStatePayload {
    [k: string]: unknown;
}
/**
 * focusNode (host -> every view, ordered).
 */
export interface FocusNode {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "focusNode";
    payload: FocusNodePayload;
    hostSequence: HostSequence;
}
/**
 * Host state: any object, ordered by hostSequence.
 */
export interface FocusNodePayload {
    [k: string]: unknown;
}
/**
 * ack (host -> every view; view -> host).
 */
export interface Ack {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "ack";
    payload: AckPayload;
}
/**
 * Any object.
 */
export interface AckPayload {
    [k: string]: unknown;
}
/**
 * snapshot (host -> the oldest view still waiting).
 */
export interface Snapshot {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "snapshot";
    payload: SnapshotPayload;
}
export interface SnapshotPayload {
    atHostSequence: number;
    state: {
        [k: string]: unknown;
    };
    [k: string]: unknown;
}
/**
 * sourceEditReview (host -> the requesting view).
 */
export interface SourceEditReview {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "sourceEditReview";
    payload: SourceEditReviewPayload;
}
/**
 * Progress: keeps the request open.
 */
export interface SourceEditReviewPayload {
    requestId: RequestId;
    target: Target;
    [k: string]: unknown;
}
/**
 * sourceEditResult (host -> the requesting view).
 */
export interface SourceEditResult {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "sourceEditResult";
    payload: SourceEditResultPayload;
}
/**
 * Final: ends the request.
 */
export interface SourceEditResultPayload {
    requestId: RequestId;
    target: Target;
    [k: string]: unknown;
}
/**
 * validateResult (host -> the requesting view).
 */
export interface ValidateResult {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "validateResult";
    payload: ValidateResultPayload;
}
/**
 * Final: ends the request.
 */
export interface ValidateResultPayload {
    requestId: RequestId;
    target: Target;
    [k: string]: unknown;
}
/**
 * captureInspectResult (host -> the requesting view).
 */
export interface CaptureInspectResult {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "captureInspectResult";
    payload: CaptureInspectResultPayload;
}
/**
 * Final: ends the request. At most 16 MiB of UTF-8 JSON (a byte bound, checked in code); sent to the requesting view only.
 */
export interface CaptureInspectResultPayload {
    requestId: RequestId;
    target: Target;
    [k: string]: unknown;
}
/**
 * exportResult (host -> the requesting view).
 */
export interface ExportResult {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "exportResult";
    payload: ExportResultPayload;
}
/**
 * Final: ends the request. At most 16 MiB of UTF-8 JSON (a byte bound, checked in code); sent to the requesting view only.
 */
export interface ExportResultPayload {
    requestId: RequestId;
    target: Target;
    [k: string]: unknown;
}
/**
 * graphPublishState (host -> the requesting view).
 */
export interface GraphPublishState {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "graphPublishState";
    payload: GraphPublishStatePayload;
}
/**
 * Progress: signing_in carries connectUrl.
 */
export interface GraphPublishStatePayload {
    requestId: RequestId;
    target: Target;
    phase: "signing_in" | "uploading";
    connectUrl?: HttpUrl;
    [k: string]: unknown;
}
/**
 * graphPublishResult (host -> the requesting view).
 */
export interface GraphPublishResult {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "graphPublishResult";
    payload: GraphPublishResultPayload;
}
/**
 * Final: published carries graphUrl and shareUrl.
 */
export interface GraphPublishResultPayload {
    requestId: RequestId;
    target: Target;
    status: "published" | "failed" | "cancelled";
    graphUrl?: HttpUrl;
    shareUrl?: HttpUrl;
    [k: string]: unknown;
}
/**
 * candidateResult (host -> one view).
 */
export interface CandidateResult {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "candidateResult";
    payload: CandidateResultPayload;
}
/**
 * Goes to the named view if it is connected.
 */
export interface CandidateResultPayload {
    requestId: RequestId;
    viewId: ViewId;
    [k: string]: unknown;
}
/**
 * snapshotRequest (view -> host).
 */
export interface SnapshotRequest {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "snapshotRequest";
    payload: SnapshotRequestPayload;
}
export interface SnapshotRequestPayload {
    /**
     * The last hostSequence the view applied, or null.
     */
    lastHostSequence: number | null;
    [k: string]: unknown;
}
/**
 * revealNode (view -> host).
 */
export interface RevealNode {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "revealNode";
    payload: RevealNodePayload;
}
export interface RevealNodePayload {
    nodeId: string;
    [k: string]: unknown;
}
/**
 * sourceEditRequest (view -> host).
 */
export interface SourceEditRequest {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "sourceEditRequest";
    payload: SourceEditRequestPayload;
}
/**
 * Needs a session minted with canProposeSourceEdits (checked in code); viewId, when present, is the sender's own.
 */
export interface SourceEditRequestPayload {
    requestId: RequestId;
    target: Target;
    viewId?: ViewId;
    [k: string]: unknown;
}
/**
 * sourceEditCancel (view -> host).
 */
export interface SourceEditCancel {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "sourceEditCancel";
    payload: SourceEditCancelPayload;
}
/**
 * Needs a session minted with canProposeSourceEdits (checked in code). A cancel the broker makes for a view that left adds "reason": "view-disconnected".
 */
export interface SourceEditCancelPayload {
    requestId: RequestId;
    target: Target;
    viewId?: ViewId;
    [k: string]: unknown;
}
/**
 * validateRequest (view -> host).
 */
export interface ValidateRequest {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "validateRequest";
    payload: ValidateRequestPayload;
}
export interface ValidateRequestPayload {
    requestId: RequestId;
    target: Target;
    [k: string]: unknown;
}
/**
 * validateCancel (view -> host).
 */
export interface ValidateCancel {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "validateCancel";
    payload: ValidateCancelPayload;
}
/**
 * A cancel the broker makes for a view that left adds "reason": "view-disconnected".
 */
export interface ValidateCancelPayload {
    requestId: RequestId;
    target: Target;
    [k: string]: unknown;
}
/**
 * captureInspectRequest (view -> host).
 */
export interface CaptureInspectRequest {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "captureInspectRequest";
    payload: CaptureInspectRequestPayload;
}
export interface CaptureInspectRequestPayload {
    requestId: RequestId;
    target: Target;
    [k: string]: unknown;
}
/**
 * captureInspectCancel (view -> host).
 */
export interface CaptureInspectCancel {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "captureInspectCancel";
    payload: CaptureInspectCancelPayload;
}
/**
 * A cancel the broker makes for a view that left adds "reason": "view-disconnected".
 */
export interface CaptureInspectCancelPayload {
    requestId: RequestId;
    target: Target;
    [k: string]: unknown;
}
/**
 * exportRequest (view -> host).
 */
export interface ExportRequest {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "exportRequest";
    payload: ExportRequestPayload;
}
export interface ExportRequestPayload {
    requestId: RequestId;
    target: Target;
    [k: string]: unknown;
}
/**
 * exportCancel (view -> host).
 */
export interface ExportCancel {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "exportCancel";
    payload: ExportCancelPayload;
}
/**
 * A cancel the broker makes for a view that left adds "reason": "view-disconnected".
 */
export interface ExportCancelPayload {
    requestId: RequestId;
    target: Target;
    [k: string]: unknown;
}
/**
 * graphPublishRequest (view -> host).
 */
export interface GraphPublishRequest {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "graphPublishRequest";
    payload: GraphPublishRequestPayload;
}
export interface GraphPublishRequestPayload {
    requestId: RequestId;
    target: Target;
    /**
     * Standard base64 of gzip data (it starts 1f 8b, so the text starts H4s to H4v) of at most 10 MiB (a byte bound, checked in code).
     */
    graphGzipBase64: string;
    [k: string]: unknown;
}
/**
 * graphPublishCancel (view -> host).
 */
export interface GraphPublishCancel {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "graphPublishCancel";
    payload: GraphPublishCancelPayload;
}
/**
 * A cancel the broker makes for a view that left adds "reason": "view-disconnected".
 */
export interface GraphPublishCancelPayload {
    requestId: RequestId;
    target: Target;
    [k: string]: unknown;
}
/**
 * candidateRequest (view -> host).
 */
export interface CandidateRequest {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "candidateRequest";
    payload: CandidateRequestPayload;
}
/**
 * viewId is the sender's own (checked in code).
 */
export interface CandidateRequestPayload {
    requestId: RequestId;
    viewId: ViewId;
    [k: string]: unknown;
}
/**
 * connected (broker -> the socket that said hello).
 */
export interface Connected {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "connected";
    payload: ConnectedPayload;
}
export interface HostConnectedPayload {
    role: "host";
    hostEpoch: HostEpoch;
    views: ViewId[];
    capabilities: Capabilities;
    [k: string]: unknown;
}
/**
 * The session's capabilities, as mint and bootstrap state them (PROTOCOL section 2): canProposeSourceEdits is what the session really has.
 */
export interface Capabilities {
    readOnly: boolean;
    canNavigateSource: boolean;
    canWriteSource: boolean;
    canRunAgent: boolean;
    canEditGraph: boolean;
    canProposeSourceEdits: boolean;
}
export interface ViewConnectedPayload {
    role: "view";
    viewId: ViewId;
    hostConnected: boolean;
    hostEpoch: HostEpoch;
    capabilities: Capabilities;
    [k: string]: unknown;
}
/**
 * viewState (broker -> host).
 */
export interface ViewState {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "viewState";
    payload: ViewStatePayload;
}
export interface ViewStatePayload {
    viewId: ViewId;
    state: ConnectionWord;
    [k: string]: unknown;
}
/**
 * error (broker -> one socket; host -> every view; view -> host).
 */
export interface ErrorMessage {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "error";
    payload: ErrorPayload;
}
/**
 * The broker's refusal of a frame; requestId when the frame carried a well-formed one.
 */
export interface BrokerErrorPayload {
    code: SocketCode;
    /**
     * A static token naming the check that failed.
     */
    detail: string;
    requestId?: RequestId;
    [k: string]: unknown;
}
/**
 * connectionState (broker -> every view).
 */
export interface ConnectionState {
    protocolVersion: ProtocolVersion;
    workspaceSessionId: WorkspaceSessionId;
    type: "connectionState";
    payload: ConnectionStatePayload;
}
export interface ConnectionStatePayload {
    state: ConnectionWord;
    hostEpoch: HostEpoch;
    [k: string]: unknown;
}
