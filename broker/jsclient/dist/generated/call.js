/* Generated from schemas/call.schema.json by npm run gen:types; do not edit. */
export {};
