/** The version every envelope carries in `v`. */
export declare const PROTOCOL_VERSION = 1;
