/* Generated from schemas/channel.schema.json by npm run gen:types; do not edit. */
export {};
