/**
 * `npm run docs:config`: writes docs/configuration.md from the configuration schema. The one place
 * that writes the page; config_reference.ts only produces its text.
 */
import { writeFileSync } from 'node:fs';
import { configurationReference, configurationReferencePath } from './config_reference.js';

// Resolved from this file (dist/ or src/), so the page lands in the repository whatever the working folder.
const target = new URL(`../${configurationReferencePath}`, import.meta.url);
writeFileSync(target, configurationReference());
process.stdout.write(`wrote ${configurationReferencePath}\n`);
