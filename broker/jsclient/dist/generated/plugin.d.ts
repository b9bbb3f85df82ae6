/**
 * Names a descriptor and its plugin folder.
 */
export type DescriptorId = string;
/**
 * 1 to 64 tools. Tool names are distinct (checked in code: JSON Schema cannot say that one member is unique across array items).
 *
 * @minItems 1
 * @maxItems 64
 */
export type Tools = [Tool, ...Tool[]];
export type ToolName = string;
/**
 * A lower-case DNS name, an IPv4 address or a bracketed IPv6 address, with an optional port; matched exactly, no wildcards. The 253-byte name bound and the IP grammar are checked in code.
 */
export type AllowedHost = string;
/**
 * A root the operator maps to a directory, mounted read-only.
 */
export type RootName = string;
/**
 * plugin.json, the descriptor of a plugin folder (PROTOCOL section 8.1). Point "$schema" at this file for editor completion; the broker ignores that key.
 */
export interface PluginJson {
    /**
     * Where an editor finds this schema; ignored by the broker.
     */
    $schema?: string;
    id: DescriptorId;
    version: string;
    /**
     * The module file in the plugin folder.
     */
    module: string;
    /**
     * Lower-case hex SHA-256 of the module file.
     */
    sha256: string;
    tools: Tools;
    bounds: Bounds;
    /**
     * Names of the operator's values (plugin_config.<id>.<name>) the plugin may read with config_get; it reads nothing else (PROTOCOL section 8.4). Two names may not differ only in ASCII case.
     *
     * @maxItems 64
     */
    config?: string[];
}
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
 */
export interface Bounds {
    timeoutMs: number;
    memoryMiB: number;
    maxOutputBytes: number;
    maxRequests?: number;
    allowedHosts?: AllowedHost[];
    roots?: RootName[];
}
