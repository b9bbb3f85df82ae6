/* Generated from schemas/descriptor.schema.json by npm run gen:types; do not edit. */
export {};
