/**
 * A control frame a peer sends on /channel (PROTOCOL section 6): a frame with a top-level type key. Any other frame is an answer envelope (answer.schema.json).
 */
export type ChannelControlFrame = ChannelHello | ChannelCatalog;
/**
 * 1 to 128 characters without control characters (C0, DEL, C1), bidirectional embeddings, overrides or isolates (U+202A-U+202E, U+2066-U+2069), bidirectional marks (U+200E, U+200F, U+061C), line or paragraph separators (U+2028, U+2029) or U+FFFD (PROTOCOL section 1.8).
 */
export type Identifier = string;
/**
 * Names a descriptor and its plugin folder.
 *
 * This interface was referenced by `Descriptor`'s JSON-Schema
 * via the `definition` "DescriptorId".
 */
export type DescriptorId = string;
/**
 * 1 to 64 tools. Tool names are distinct (checked in code: JSON Schema cannot say that one member is unique across array items).
 *
 * @minItems 1
 * @maxItems 64
 *
 * This interface was referenced by `Descriptor`'s JSON-Schema
 * via the `definition` "Tools".
 */
export type Tools = [Tool, ...Tool[]];
/**
 * This interface was referenced by `Descriptor`'s JSON-Schema
 * via the `definition` "ToolName".
 */
export type ToolName = string;
/**
 * A lower-case DNS name, an IPv4 address or a bracketed IPv6 address, with an optional port; matched exactly, no wildcards. The 253-byte name bound and the IP grammar are checked in code.
 *
 * This interface was referenced by `Descriptor`'s JSON-Schema
 * via the `definition` "AllowedHost".
 */
export type AllowedHost = string;
/**
 * A root the operator maps to a directory, mounted read-only.
 *
 * This interface was referenced by `Descriptor`'s JSON-Schema
 * via the `definition` "RootName".
 */
export type RootName = string;
/**
 * The bearer hello a paired environment sends first (PROTOCOL section 6.2). The whole frame is at most 1 KiB and the bearer at most 256 bytes (byte bounds, checked in code).
 */
export interface ChannelHello {
    type: "hello";
    role: "environment";
    bearer: Identifier;
}
/**
 * The descriptors a peer admitted (PROTOCOL section 6.4); replaces its previous catalog. Descriptor ids are distinct (checked in code).
 */
export interface ChannelCatalog {
    type: "catalog";
    /**
     * @maxItems 256
     */
    descriptors: Descriptor[];
}
/**
 * A descriptor as a channel catalog carries it (PROTOCOL section 6.4): a /v1/tools entry without executor. Its parts are shared by plugin.json (PROTOCOL section 8.1).
 */
export interface Descriptor {
    descriptorId: DescriptorId;
    tools: Tools;
    bounds: Bounds;
}
/**
 * This interface was referenced by `Descriptor`'s JSON-Schema
 * via the `definition` "Tool".
 */
export interface Tool {
    name: ToolName;
    /**
     * At most 4096 bytes of UTF-8 (the character bound here is implied by it; the byte bound is checked in code).
     */
    description?: string;
    /**
     * The JSON Schema (draft 2020-12) that a call's args must satisfy.
     */
    inputSchema: {
        [k: string]: unknown;
    };
    /**
     * Optional: the JSON Schema (draft 2020-12) every observation of the tool must satisfy (output-invalid otherwise); MCP lists it. Its root says "type": "object": MCP's structuredContent is an object.
     */
    outputSchema?: {
        type: "object";
        [k: string]: unknown;
    };
}
/**
 * What the descriptor may do per call; callers echo it in boundsEcho (PROTOCOL section 8.1).
 *
 * This interface was referenced by `Descriptor`'s JSON-Schema
 * via the `definition` "Bounds".
 */
export interface Bounds {
    timeoutMs: number;
    memoryMiB: number;
    maxOutputBytes: number;
    maxRequests?: number;
    allowedHosts?: AllowedHost[];
    roots?: RootName[];
}
