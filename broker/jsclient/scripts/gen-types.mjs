// Generates TypeScript types from the JSON Schemas in ../schemas into one
// module per schema under src/generated (or the folder given as the first
// argument, which the Go drift test uses). Run it with `npm run gen:types`.
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compile } from 'json-schema-to-typescript';

const here = dirname(fileURLToPath(import.meta.url));
const schemas = resolve(here, '..', 'schemas');
const out = resolve(process.argv[2] ?? join(here, '..', 'src', 'generated'));

const files = ['call', 'answer', 'descriptor', 'channel', 'plugin', 'local-ws'];

await mkdir(out, { recursive: true });
for (const name of files) {
  const path = join(schemas, `${name}.schema.json`);
  const schema = JSON.parse(await readFile(path, 'utf8'));
  const ts = await compile(schema, schema.title, {
    cwd: schemas,
    bannerComment: `/* Generated from schemas/${name}.schema.json by npm run gen:types; do not edit. */`,
    unreachableDefinitions: true,
    additionalProperties: true,
    strictIndexSignatures: false,
    format: true,
  });
  await writeFile(join(out, `${name}.ts`), ts);
}
