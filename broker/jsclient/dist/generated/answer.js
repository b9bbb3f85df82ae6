/* Generated from schemas/answer.schema.json by npm run gen:types; do not edit. */
export {};
