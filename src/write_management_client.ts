/**
 * `npm run api:client`: writes test/generated/management_api.ts, the types openapi-typescript makes
 * of the management API's OpenAPI document, built here without a network (management_api_document.ts).
 */
import { writeFileSync } from 'node:fs';
import { managementApiDocument } from './management_api_document.js';
import { managementClientTypes, managementClientTypesPath } from './management_client_types.js';

// Resolved from this file (dist/ or src/), so the file lands in the repository whatever the working folder.
const target = new URL(`../${managementClientTypesPath}`, import.meta.url);
writeFileSync(target, await managementClientTypes(await managementApiDocument()));
process.stdout.write(`wrote ${managementClientTypesPath}\n`);
