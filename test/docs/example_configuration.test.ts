/**
 * docs/examples/latchkey.yaml, the complete example a team starts from, stays valid: its `server`
 * section passes the schema the server reads it with, it declares every kind of object the
 * walk-through (docs/gitops.md) explains, and it holds no secret's value.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseConfigurationText } from '../../src/config_file/load.js';
import { serverSettings, serverSettingsSchema } from '../../src/config_file/server_settings.js';

const examplePath = 'docs/examples/latchkey.yaml';

interface Example {
  server: Record<string, unknown>;
  apis: { identifier: string; scopes: string[] }[];
  roles: { name: string; permissions: string[]; groups?: string[] }[];
  clients: { client_id: string; confidential: boolean; grant_types: string[]; redirect_uris?: string[]; web_origins?: string[]; grants?: unknown[] }[];
  connectors: { id: string; type: string; client_secret?: unknown }[];
}

const example = parse(readFileSync(new URL(`../../${examplePath}`, import.meta.url), 'utf8')) as Example;

/** The keys that hold a secret: the server's secret settings, and the clients' and connectors' own. */
const secretKeys = new Set([...serverSettings.filter((s) => s.meta.secret).map((s) => s.key), 'client_secret', 'bind_password']);

/** Every value under a key that holds a secret, anywhere in the file. */
function secretValues(value: unknown, key = ''): unknown[] {
  if (secretKeys.has(key)) return [value];
  if (Array.isArray(value)) return value.flatMap((item) => secretValues(item));
  if (typeof value === 'object' && value !== null) return Object.entries(value).flatMap(([k, v]) => secretValues(v, k));
  return [];
}

describe(examplePath, () => {
  it('has a server section the server accepts', () => {
    const parsed = serverSettingsSchema.safeParse(example.server);
    expect(parsed.error?.issues ?? []).toEqual([]);
  });

  it('is accepted whole by the schema config apply validates it with', () => {
    const parsed = parseConfigurationText(readFileSync(new URL(`../../${examplePath}`, import.meta.url), 'utf8'), examplePath);
    expect(parsed.ok ? [] : parsed.problems).toEqual([]);
  });

  it('declares two APIs, a role granted by an upstream group, a web, a CLI and a machine client, and an OIDC connector', () => {
    expect(example.apis).toHaveLength(2);
    expect(example.roles.find((r) => r.groups?.includes('platform'))?.permissions.length).toBeGreaterThan(0);
    const web = example.clients.find((c) => c.confidential && c.grant_types.includes('authorization_code'));
    expect(web?.redirect_uris?.length).toBeGreaterThan(0);
    expect(web?.web_origins?.length).toBeGreaterThan(0);
    expect(example.clients.find((c) => !c.confidential && c.grant_types.includes('device_code'))).toBeDefined();
    expect(example.clients.find((c) => c.confidential && c.grant_types.includes('client_credentials'))?.grants?.length).toBeGreaterThan(0);
    expect(example.connectors.find((c) => c.type === 'oidc')?.client_secret).toEqual({ env: expect.any(String) });
  });

  it('holds no secret, only references to one', () => {
    const secrets = [...secretValues(example), example.server.db];
    expect(secrets.length).toBeGreaterThan(5);
    expect(secrets.filter((s) => !(typeof s === 'object' && s !== null && ('env' in s || 'file' in s)))).toEqual([]);
  });
});
