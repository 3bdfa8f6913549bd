import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { environmentSchema, loadConfig } from '../../src/config.js';
import { settingGroupIds } from '../../src/config_metadata.js';
import { configurationReference, configurationReferencePath, configurationSettings } from '../../src/config_reference.js';

const repositoryRoot = new URL('../../', import.meta.url);

describe('docs/configuration.md', () => {
  it('is what the generator writes from the schema', () => {
    const committed = readFileSync(new URL(configurationReferencePath, repositoryRoot), 'utf8');
    expect(committed, `${configurationReferencePath} is stale: run \`npm run docs:config\` and commit the result`).toBe(configurationReference());
  });

  it('has a heading and a table-of-contents link for every setting', () => {
    const page = configurationReference();
    for (const name of Object.keys(environmentSchema.shape)) {
      expect(page).toContain(`\n### ${name}\n`);
      expect(page).toContain(`[\`${name}\`](#${name.toLowerCase()})`);
    }
  });
});

describe('the configuration schema', () => {
  it('describes every setting, with its group and variable name', () => {
    const names = Object.keys(environmentSchema.shape);
    const settings = configurationSettings();
    expect(settings.map((s) => s.name)).toEqual(names);
    for (const { name, meta } of settings) {
      expect(meta.env, name).toBe(name);
      expect(meta.description.length, `${name} needs a description an operator can act on`).toBeGreaterThan(40);
      expect(settingGroupIds, name).toContain(meta.group);
    }
  });

  it('leaves no group empty', () => {
    const used = new Set(configurationSettings().map((s) => s.meta.group));
    expect([...settingGroupIds].filter((group) => !used.has(group))).toEqual([]);
  });

  it('documents as default the value an unset variable gets', () => {
    const unset = loadConfig({});
    const withDefaults = configurationSettings().filter((s) => s.meta.envDefault !== undefined);
    expect(withDefaults.length).toBeGreaterThan(20);
    for (const { name, meta } of withDefaults) {
      // The same configuration; only where the value came from differs.
      expect(loadConfig({ [name]: meta.envDefault ?? '' }), `${name}=${meta.envDefault ?? ''}`).toEqual({ ...unset, settingSources: expect.any(Object) });
    }
  });

  it('says what applies when a setting without a plain default is unset', () => {
    for (const { name, meta } of configurationSettings()) {
      expect(meta.envDefault !== undefined || meta.whenUnset !== undefined, name).toBe(true);
    }
  });

  it('carries each description, group and variable name into its JSON Schema', () => {
    const jsonSchema = z.toJSONSchema(environmentSchema, { io: 'input', unrepresentable: 'any' });
    const properties = z.record(z.string(), z.looseObject({ description: z.string(), group: z.string(), env: z.string() })).parse(jsonSchema.properties);
    expect(Object.keys(properties)).toEqual(Object.keys(environmentSchema.shape));
    for (const [name, property] of Object.entries(properties)) {
      expect(property.env, name).toBe(name);
    }
  });
});
