/**
 * Configuration as code as an operator uses it: `latchkey config apply | export | schema` and
 * `serve` with LATCHKEY_CONFIG, over the real executable, on SQLite and on PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { runCli, startServerProcess } from '../helpers/process.js';
import { describeWithPostgres, freshSchema, pgTestUrl } from '../helpers/postgres.js';

const reports = 'https://reports.example.com';

const teamFile = `
apis:
  - identifier: ${reports}
    name: Reports
    scopes: [read:reports, write:reports]
roles:
  - name: analyst
    description: Reads reports
    permissions: ["${reports}:read:reports"]
    groups: [data]
clients:
  - client_id: web
    name: Web app
    redirect_uris: [https://app.example.com/callback]
    first_party: true
  - client_id: tv
    grant_types: [device_code, refresh_token]
  - client_id: nightly
    grant_types: [client_credentials]
    confidential: true
    client_secret: { env: NIGHTLY_SECRET }
    grants:
      - api: ${reports}
        scopes: [read:reports]
connectors:
  - id: corp
    type: oidc
    issuer: https://idp.example.com
    client_id: latchkey
    client_secret: { file: corp-secret.txt }
    groups_claim: groups
`;

function configSuite(database: 'sqlite' | 'postgres') {
  let dir: string;
  let databases = 0;

  /** A fresh, empty database: its environment. */
  async function freshDatabase(): Promise<Record<string, string>> {
    databases += 1;
    const secrets = { NIGHTLY_SECRET: 'nightly-secret-value-1', LATCHKEY_SECRET_KEY: 'K'.repeat(43) };
    if (database === 'sqlite') return { LATCHKEY_DB: join(dir, `latchkey-${databases}.db`), ...secrets };
    const schema = freshSchema();
    const admin = new pg.Pool({ connectionString: pgTestUrl, max: 1 });
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.end();
    const url = new URL(pgTestUrl!);
    url.searchParams.set('options', `-c search_path=${schema}`);
    return { LATCHKEY_DB: url.toString(), ...secrets };
  }

  /** The audit log's events, oldest first, as stored. */
  async function auditEvents(env: Record<string, string>): Promise<{ event: string; actor: string; details: Record<string, unknown> }[]> {
    const query = 'SELECT event, actor, details FROM audit_events ORDER BY id';
    let rows: { event: string; actor: string; details: string }[];
    if (database === 'sqlite') {
      const Database = (await import('better-sqlite3')).default;
      const db = new Database(env.LATCHKEY_DB, { readonly: true });
      try {
        rows = db.prepare(query).all() as typeof rows;
      } finally {
        db.close();
      }
    } else {
      const pool = new pg.Pool({ connectionString: env.LATCHKEY_DB, max: 1 });
      try {
        rows = (await pool.query<{ event: string; actor: string; details: string }>(query)).rows;
      } finally {
        await pool.end();
      }
    }
    return rows.map((r) => ({ event: r.event, actor: r.actor, details: JSON.parse(r.details) as Record<string, unknown> }));
  }

  function writeConfig(name: string, text: string): string {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  }

  async function cli(env: Record<string, string>, args: string[]): Promise<{ stdout: string; stderr: string }> {
    const result = await runCli(args, env);
    expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
    return result;
  }

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'latchkey-config-'));
    writeFileSync(join(dir, 'corp-secret.txt'), 'corp-client-secret\n');
  });

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('apply prints the plan, then applies it; a second apply plans nothing', async () => {
    const env = await freshDatabase();
    const file = writeConfig('team.yaml', teamFile);
    const first = await cli(env, ['config', 'apply', '-f', file]);
    expect(first.stdout).toBe(
      [
        `+ create API ${reports}`,
        '+ create role analyst',
        '+ create client web',
        '+ create client tv',
        '+ create client nightly',
        '    client_secret: { env: NIGHTLY_SECRET }',
        '+ create connector corp',
        '    client_secret: { file: corp-secret.txt }',
        'Plan: 6 to create, 0 to update, 0 to delete.',
        '',
      ].join('\n'),
    );
    expect(first.stderr).toContain(`Applied 6 changes from ${file}`);
    const roles = JSON.parse((await cli(env, ['roles', 'list', '--json'])).stdout) as { name: string; permissions: string[] }[];
    expect(roles.find((r) => r.name === 'analyst')?.permissions).toEqual([`${reports}:read:reports`]);
    const second = await cli(env, ['config', 'apply', '-f', file]);
    expect(second.stdout).toBe('No changes: the database already holds what the file declares.\n');

    // One audit event per change, naming the file.
    const events = await auditEvents(env);
    expect(events.map((e) => `${e.event} ${String(e.details.id)}`)).toEqual([
      `api.created ${reports}`,
      'role.created analyst',
      'client.created web',
      'client.created tv',
      'client.created nightly',
      'connector.created corp',
    ]);
    expect(events.every((e) => e.actor === 'cli' && e.details.configFile === file)).toBe(true);

    // A change: only what differs is planned, and a secret is never printed.
    const changed = writeConfig('team.yaml', teamFile.replace('name: Web app', 'name: Web application'));
    const third = await cli({ ...env, NIGHTLY_SECRET: 'nightly-secret-value-2' }, ['config', 'apply', '-f', changed]);
    expect(third.stdout).toBe(
      [
        '~ update client web',
        '    name: "Web app" → "Web application"',
        '~ update client nightly',
        '    client_secret: (set) → { env: NIGHTLY_SECRET }',
        'Plan: 0 to create, 2 to update, 0 to delete.',
        '',
      ].join('\n'),
    );
    expect(third.stdout + third.stderr).not.toContain('nightly-secret-value');
  });

  it('--dry-run prints the plan and changes nothing', async () => {
    const env = await freshDatabase();
    const before = (await cli(env, ['config', 'export'])).stdout;
    const dry = await cli(env, ['config', 'apply', '-f', writeConfig('dry.yaml', teamFile), '--dry-run']);
    expect(dry.stdout).toContain('Plan: 6 to create, 0 to update, 0 to delete.');
    expect(dry.stderr).toContain('Dry run: nothing was changed.');
    expect((await cli(env, ['config', 'export'])).stdout).toBe(before);
    expect((await cli(env, ['clients', 'list'])).stdout).not.toContain('nightly');
  });

  it('--prune deletes only what the file no longer declares, never an object made by hand', async () => {
    const env = await freshDatabase();
    await cli(env, ['clients', 'add', 'by-hand', '--redirect-uri', 'https://hand.example.com/cb']);
    const file = writeConfig('prune.yaml', teamFile);
    await cli(env, ['config', 'apply', '-f', file]);
    const smaller = writeConfig('prune.yaml', teamFile.replace(/ {2}- client_id: tv\n {4}grant_types: \[device_code, refresh_token\]\n/, ''));
    // Without --prune, a client the file no longer declares stays.
    expect((await cli(env, ['config', 'apply', '-f', smaller])).stdout).toBe('No changes: the database already holds what the file declares.\n');
    const pruned = await cli(env, ['config', 'apply', '-f', smaller, '--prune']);
    expect(pruned.stdout).toBe(['- delete client tv', 'Plan: 0 to create, 0 to update, 1 to delete.', ''].join('\n'));
    const clients = (await cli(env, ['clients', 'list'])).stdout;
    expect(clients).toContain('by-hand');
    expect(clients).not.toMatch(/^tv\b/m);
    expect(clients).toContain('nightly');
  });

  it('export → apply on an empty database → export again is byte-identical, in YAML and in JSON; no secret is printed', async () => {
    const source = await freshDatabase();
    await cli(source, ['config', 'apply', '-f', writeConfig('source.yaml', teamFile)]);
    // An object made by hand is exported too.
    await cli(source, ['clients', 'add', 'by-hand', '--redirect-uri', 'https://hand.example.com/cb']);
    for (const format of ['yaml', 'json'] as const) {
      const exported = (await cli(source, ['config', 'export', '--format', format])).stdout;
      expect(exported).not.toContain('nightly-secret-value');
      expect(exported).not.toContain('corp-client-secret');
      expect(exported).toContain('CLIENT_NIGHTLY_SECRET');
      expect(exported).not.toContain('LATCHKEY_');
      const target = await freshDatabase();
      const secrets = { CLIENT_NIGHTLY_SECRET: 'nightly-secret-value-1', CONNECTOR_CORP_CLIENT_SECRET: 'corp-client-secret' };
      await cli({ ...target, ...secrets }, ['config', 'apply', '-f', writeConfig(`exported.${format}`, exported)]);
      expect((await cli(target, ['config', 'export', '--format', format])).stdout).toBe(exported);
    }
  });

  it('a bad file exits 3 with every problem, each naming its place, and changes nothing', async () => {
    const env = await freshDatabase();
    const bad = writeConfig(
      'bad.yaml',
      teamFile
        .replace('https://app.example.com/callback', 'not-a-url')
        .replace('client_secret: { env: NIGHTLY_SECRET }', 'client_secret: plain-text-secret')
        .replace('type: oidc', 'type: oidc\n    colour: blue'),
    );
    const result = await runCli(['config', 'apply', '-f', bad], env);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('clients[0].redirect_uris[0]: "not-a-url" is not an absolute URI');
    expect(result.stderr).toContain('clients[2].client_secret: a secret is never written in the file: use a reference, { env: NAME } or { file: PATH }');
    expect(result.stderr).toContain('connectors[0].colour: unknown field');
    expect(result.stdout).toBe('');
    expect((await cli(env, ['apis', 'list'])).stdout).not.toContain(reports);
  });

  it('a file declaring the built-in API is refused by config apply and at start, naming the field; the built-in API keeps its scopes, managed by no file', async () => {
    const env = await freshDatabase();
    // A server that started once made the built-in API and recorded its issuer.
    const server = await startServerProcess(env);
    await server.stop();
    const builtIn = `${server.base}/api/v1`;
    const file = writeConfig('built-in.yaml', `apis:\n  - identifier: ${builtIn}\n    name: Mine\n    scopes: [read:users, deploy:things]\n`);
    const message = `apis[0].identifier: "${builtIn}" is built in (the management API): it cannot be declared`;
    // The admin command run with an issuer of its own: the recorded one still names the built-in API.
    const applied = await runCli(['config', 'apply', '-f', file], { ...env, LATCHKEY_ISSUER: 'https://elsewhere.example.com' });
    expect(applied.code).toBe(3);
    expect(applied.stderr).toContain(message);
    expect(applied.stdout).toBe('');
    const atStart = await runCli(['serve'], { ...env, LATCHKEY_CONFIG: file, PORT: '0', LATCHKEY_ISSUER: server.base });
    expect(atStart.code).toBe(3);
    expect(atStart.stderr).toContain(message);
    const listed = JSON.parse((await cli(env, ['apis', 'list', '--json'])).stdout) as {
      identifier: string;
      name: string;
      scopes: string[];
      managed_by?: string | null;
    }[];
    const api = listed.find((a) => a.identifier === builtIn)!;
    expect(api.name).toBe('Latchkey management API');
    expect(api.scopes).toEqual(expect.arrayContaining(['read:users', 'write:users', 'read:audit-events', 'write:audit-events']));
    expect(api.scopes).not.toContain('deploy:things');
    expect(api.managed_by ?? undefined).toBeUndefined();
  });

  it('serve applies LATCHKEY_CONFIG at start (a machine client of the file gets a token with its secret); a bad file stops the start with exit 3', async () => {
    const env = await freshDatabase();
    const file = writeConfig('serve.yaml', teamFile);
    const server = await startServerProcess({ ...env, LATCHKEY_CONFIG: file });
    try {
      const response = await fetch(`${server.base}/oauth/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from('nightly:nightly-secret-value-1').toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', resource: reports, scope: 'read:reports' }),
      });
      expect(response.status, await response.clone().text()).toBe(200);
      expect(((await response.json()) as { scope: string }).scope).toBe('read:reports');
    } finally {
      await server.stop();
    }
    expect((await cli(env, ['config', 'apply', '-f', file])).stdout).toBe('No changes: the database already holds what the file declares.\n');

    const bad = writeConfig('serve-bad.yaml', teamFile.replace('https://app.example.com/callback', 'not-a-url'));
    const refused = await runCli(['serve'], { ...env, LATCHKEY_CONFIG: bad, PORT: '0', LATCHKEY_ISSUER: 'http://127.0.0.1:1' });
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('clients[0].redirect_uris[0]: "not-a-url" is not an absolute URI');
  });
}

describe('configuration as code on SQLite', () => configSuite('sqlite'));
describeWithPostgres('configuration as code on PostgreSQL (LATCHKEY_TEST_PG_URL)', () => configSuite('postgres'));

// A file arrives by pull request: a connector's secret read from the server's own key file would
// go to the upstream the file names the first time someone signs in through it.
describe("secret references never read the server's own key", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'latchkey-config-key-'));
    mkdirSync(join(dir, 'checkout'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('config apply and serve refuse the key file (by .., a symbolic link) and LATCHKEY_* variables, naming each reference; nothing is stored', async () => {
    const env = { LATCHKEY_DB: join(dir, 'data', 'latchkey.db') };
    // The database and the key file beside it, as a first start makes them.
    expect((await runCli(['keys', 'list'], env)).code).toBe(0);
    const keyFile = `${env.LATCHKEY_DB}.key`;
    expect(statSync(keyFile).isFile()).toBe(true);
    symlinkSync(keyFile, join(dir, 'checkout', 'logo.txt'));
    const connector = (id: string, reference: string) =>
      `  - id: ${id}\n    type: oidc\n    issuer: https://idp.attacker.example\n    client_id: latchkey\n    client_secret: ${reference}\n`;
    const file = join(dir, 'checkout', 'latchkey.yaml');
    writeFileSync(
      file,
      `connectors:\n${connector('one', '{ file: ../data/latchkey.db.key }')}${connector('two', '{ file: logo.txt }')}${connector('three', '{ env: LATCHKEY_SECRET_KEY }')}`,
    );
    const never = 'is never read as a secret of the file (its value would go wherever the file sends it)';
    const expected = [
      `connectors[0].client_secret: { file: ../data/latchkey.db.key } is the server's secret key file (${keyFile}): the server's key ${never}`,
      `connectors[1].client_secret: { file: logo.txt } is the server's secret key file (${keyFile}): the server's key ${never}`,
      `connectors[2].client_secret: { env: LATCHKEY_SECRET_KEY } is the server's secret key, which ${never}`,
    ];
    const key = readFileSync(keyFile, 'utf8').trim();
    const applied = await runCli(['config', 'apply', '-f', file], { ...env, LATCHKEY_SECRET_KEY: key, LATCHKEY_SECRET_KEY_FILE: keyFile });
    expect(applied.code, applied.stderr).toBe(3);
    for (const line of expected) expect(applied.stderr).toContain(line);
    expect(applied.stdout).toBe('');
    const atStart = await runCli(['serve'], { ...env, LATCHKEY_CONFIG: file, PORT: '0' });
    expect(atStart.code, atStart.stderr).toBe(3);
    for (const line of expected) expect(atStart.stderr).toContain(line);
    expect(applied.stderr + atStart.stderr).not.toContain(key);
    expect(JSON.parse((await runCli(['connectors', 'list', '--json'], env)).stdout)).toEqual([]);
  });
});

describe('latchkey config schema', () => {
  it('prints the JSON Schema of the file', async () => {
    const result = await runCli(['config', 'schema'], {});
    expect(result.code, result.stderr).toBe(0);
    const schema = JSON.parse(result.stdout) as { properties: Record<string, unknown> };
    expect(Object.keys(schema.properties)).toEqual(['server', 'apis', 'roles', 'clients', 'connectors']);
  });
});
