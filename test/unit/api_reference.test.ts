import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiReference, apiReferenceCommand, apiReferencePath } from '../../src/api_reference.js';
import { managementApiDocument, type OpenApiDocument } from '../../src/management_api_document.js';

const repositoryRoot = new URL('../../', import.meta.url);

let document: OpenApiDocument;
beforeAll(async () => {
  document = await managementApiDocument();
});

describe('docs/api-reference.md', () => {
  it('is what the generator writes from the OpenAPI document the server builds', () => {
    const committed = readFileSync(new URL(apiReferencePath, repositoryRoot), 'utf8');
    expect(committed, `${apiReferencePath} is stale: run \`${apiReferenceCommand}\` and commit the result`).toBe(apiReference(document));
  });

  it('has a section for every operation, with its scope, and If-Match where a stale ETag is refused', () => {
    const page = apiReference(document);
    for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>))
      for (const [method, operation] of Object.entries(item)) {
        const heading = `\n### ${method.toUpperCase()} ${path}\n`;
        expect(page).toContain(heading);
        const section = page.slice(page.indexOf(heading) + 1).split('\n### ')[0]!;
        expect(section.includes('| `If-Match` | header |'), `${method} ${path}`).toBe('412' in operation.responses);
      }
    const createClient = page.slice(page.indexOf('\n### POST /clients\n')).split('\n### ')[1]!;
    expect(createClient).toContain('Scope: `write:clients`');
    expect(createClient).toContain('| `client_id` | string | yes |');
    expect(createClient).toContain('| `grants[].api` | string | yes | not empty; at most 2048 characters |');
    expect(createClient).toContain('| 201 |');
    expect(createClient).toContain('| `client_secret` (optional) | string |');
  });

  it('is the same whatever order the routes register their operations in', () => {
    const reversed = { ...document, paths: Object.fromEntries(Object.entries(document.paths as Record<string, unknown>).reverse()) };
    expect(apiReference(reversed)).toBe(apiReference(document));
  });
});
