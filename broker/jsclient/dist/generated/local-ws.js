/* Generated from schemas/local-ws.schema.json by npm run gen:types; do not edit. */
export {};
