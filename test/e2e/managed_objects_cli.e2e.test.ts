/**
 * Objects a configuration file declares (managedBy), as an operator meets them with the `latchkey`
 * executable: every admin command that would change a managed client, API, role or connector
 * exits 1 with a sentence naming the file and changes nothing; objects nobody declared stay
 * editable; roles take the upstream groups that grant them. On SQLite and on PostgreSQL
 * (LATCHKEY_TEST_PG_URL).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { openConfiguredStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { runCli } from '../helpers/process.js';
import { describeWithPostgres, freshSchema, pgTestUrl } from '../helpers/postgres.js';

const reports = 'https://reports.example.com';
const file = '/etc/latchkey/latchkey.yaml';
const sentence = (kind: string, id: string) => `latchkey: ${kind} "${id}" is managed by ${file}: change it there and run latchkey config apply`;

function managedObjectsSuite(database: 'sqlite' | 'postgres'): void {
  let dir: string;
  let env: Record<string, string>;
  let store: Store;

  async function cli(args: string[], input?: string): Promise<string> {
    const result = await runCli(args, env, input);
    expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
    return result.stdout;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'latchkey-managed-'));
    if (database === 'sqlite') {
      env = { LATCHKEY_DB: join(dir, 'latchkey.db') };
    } else {
      const schema = freshSchema();
      const admin = new pg.Pool({ connectionString: pgTestUrl, max: 1 });
      await admin.query(`CREATE SCHEMA ${schema}`);
      await admin.end();
      const url = new URL(pgTestUrl!);
      url.searchParams.set('options', `-c search_path=${schema}`);
      env = { LATCHKEY_DB: url.toString(), LATCHKEY_SECRET_KEY: 'K'.repeat(43) };
    }
    await cli(['apis', 'add', reports, '--name', 'Reports', '--scope', 'read:reports']);
    await cli(['roles', 'add', 'analyst', '--permission', `${reports}:read:reports`, '--group', 'data', '--group', 'Analysts']);
    await cli(['roles', 'add', 'free']);
    await cli(['clients', 'add', 'nightly', '--confidential', '--grant-type', 'client_credentials']);
    await cli(['clients', 'add', 'tv', '--grant-type', 'device_code']);
    store = await openConfiguredStore(loadConfig(env));
    await store.createConnector({
      id: 'sso',
      type: 'oidc',
      name: 'SSO',
      config: { issuer: 'https://sso.example.com', clientId: 'x' },
      secret: undefined,
      createdAt: 1_800_000_000,
    });
    for (const [kind, id] of [
      ['client', 'nightly'],
      ['api', reports],
      ['role', 'analyst'],
      ['connector', 'sso'],
    ] as const) {
      expect(await store.setManagedBy(kind, id, file)).toBe(true);
    }
  });

  afterAll(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('every admin command changing a managed object exits 1 with the sentence naming the file, and changes nothing', async () => {
    const refusals: [string[], string][] = [
      [['clients', 'remove', 'nightly'], sentence('client', 'nightly')],
      [['clients', 'disable', 'nightly'], sentence('client', 'nightly')],
      [['clients', 'rotate-secret', 'nightly'], sentence('client', 'nightly')],
      [['clients', 'grant', 'nightly', reports, '--scope', 'read:reports'], sentence('client', 'nightly')],
      [['apis', 'update', reports, '--name', 'Renamed'], sentence('API', reports)],
      [['apis', 'remove', reports], sentence('API', reports)],
      [['roles', 'update', 'analyst', '--description', 'Changed'], sentence('role', 'analyst')],
      [['roles', 'remove', 'analyst'], sentence('role', 'analyst')],
      [['connectors', 'remove', 'sso'], sentence('connector', 'sso')],
    ];
    for (const [args, text] of refusals) {
      const result = await runCli(args, env);
      expect(result.code, args.join(' ')).toBe(1);
      expect(result.stderr.trim(), args.join(' ')).toBe(text);
    }
    expect(await store.findClient('nightly')).toMatchObject({ disabled: false, managedBy: file });
    expect(await store.listClientGrants('nightly')).toEqual([]);
    expect(await store.findApi(reports)).toMatchObject({ name: 'Reports' });
    expect(await store.findRole('analyst')).toMatchObject({ description: undefined, permissions: [{ api: reports, scope: 'read:reports' }] });
    expect(await store.findConnector('sso')).toBeDefined();
  });

  it('objects nobody declared stay editable', async () => {
    await cli(['clients', 'disable', 'tv']);
    await cli(['roles', 'update', 'free', '--description', 'Changed', '--group', 'ops']);
    expect(await store.findClient('tv')).toMatchObject({ disabled: true });
    expect(await store.findRole('free')).toMatchObject({ description: 'Changed', groups: ['ops'] });
    await cli(['roles', 'update', 'free', '--no-groups']);
    expect(await store.findRole('free')).toMatchObject({ groups: [] });
  });

  it('roles list shows the groups that grant each role, and whether a file manages it', async () => {
    const listed = JSON.parse(await cli(['roles', 'list', '--json'])) as { name: string; groups: string[]; managed_by: string | null }[];
    expect(listed.find((r) => r.name === 'analyst')).toMatchObject({ groups: ['Analysts', 'data'], managed_by: file });
    expect(listed.find((r) => r.name === 'free')).toMatchObject({ managed_by: null });
    expect(await cli(['roles', 'list'])).toMatch(/analyst .*Analysts data/);
  });

  it('users list --json tells roles granted by hand from roles held through upstream groups', async () => {
    await cli(['users', 'add', 'erin', '--email', 'erin@example.com', '--password-stdin'], 'erin-password');
    await cli(['users', 'grant', 'erin', 'analyst']);
    const erin = (await store.findUserByUsername('erin'))!;
    expect(await store.setGroupRoles(erin.id, ['free', 'analyst'], 1_800_000_000)).toEqual({ gained: ['analyst', 'free'], lost: [] });
    const users = JSON.parse(await cli(['users', 'list', '--json'])) as { username: string; roles: string[]; direct_roles: string[]; group_roles: string[] }[];
    expect(users.find((u) => u.username === 'erin')).toMatchObject({ roles: ['analyst', 'free'], direct_roles: ['analyst'], group_roles: ['analyst', 'free'] });
  });
}

describe('managed objects and role groups through the executable (SQLite)', () => {
  managedObjectsSuite('sqlite');
});

describeWithPostgres('managed objects and role groups through the executable (PostgreSQL)', () => {
  managedObjectsSuite('postgres');
});
