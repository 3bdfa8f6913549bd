/**
 * `npm run docs:api`: writes docs/api-reference.md from the management API's OpenAPI document,
 * built here without a network (management_api_document.ts). The one place that writes the page;
 * api_reference.ts only produces its text.
 */
import { writeFileSync } from 'node:fs';
import { apiReference, apiReferencePath } from './api_reference.js';
import { managementApiDocument } from './management_api_document.js';

// Resolved from this file (dist/ or src/), so the page lands in the repository whatever the working folder.
const target = new URL(`../${apiReferencePath}`, import.meta.url);
writeFileSync(target, apiReference(await managementApiDocument()));
process.stdout.write(`wrote ${apiReferencePath}\n`);
