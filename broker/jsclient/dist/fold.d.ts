/** The Unicode version of the table. */
export declare const UNICODE_VERSION = "15.0.0";
/** foldCodePoint is the fold of one code point (not a surrogate). */
export declare function foldCodePoint(cp: number): number;
