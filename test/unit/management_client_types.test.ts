import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { managementApiDocument } from '../../src/management_api_document.js';
import { managementClientCommand, managementClientTypes, managementClientTypesPath } from '../../src/management_client_types.js';

const repositoryRoot = new URL('../../', import.meta.url);

describe('test/generated/management_api.ts', () => {
  it('is what openapi-typescript makes of the OpenAPI document the server builds', async () => {
    const committed = readFileSync(new URL(managementClientTypesPath, repositoryRoot), 'utf8');
    const made = await managementClientTypes(await managementApiDocument());
    expect(committed, `${managementClientTypesPath} is stale: run \`${managementClientCommand}\` and commit the result`).toBe(made);
  });

  it('is the same whatever order the routes register their operations in', async () => {
    const document = await managementApiDocument();
    const reversed = { ...document, paths: Object.fromEntries(Object.entries(document.paths as Record<string, unknown>).reverse()) };
    expect(await managementClientTypes(reversed)).toBe(await managementClientTypes(document));
  });
});
