/* Generated from schemas/plugin.schema.json by npm run gen:types; do not edit. */
export {};
