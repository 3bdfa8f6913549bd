/**
 * Roles and machine clients as an operator and an outside client meet them: the
 * `latchkey` executable declares an API's scopes, a role, a grant and two machine clients on a
 * running `latchkey serve`; openid-client (a certified relying-party library) then runs
 * client_credentials with client_secret_basic and with private_key_jwt over a real socket, and a
 * person's device-flow token carries only what their role allows. On SQLite, and on PostgreSQL
 * (LATCHKEY_TEST_PG_URL) where the replay cache of client assertions lives in the database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as client from 'openid-client';
import { createRemoteJWKSet, exportJWK, generateKeyPair, jwtVerify, type CryptoKey } from 'jose';
import { runCli, startServerProcess, type ServerProcess } from '../helpers/process.js';
import pg from 'pg';
import { describeWithPostgres, freshSchema, pgTestUrl } from '../helpers/postgres.js';
import { actOnDeviceCode, Browser, fetchTransport } from '../helpers/browser.js';

const reports = 'https://reports.example.com';

function machineClientSuite(database: 'sqlite' | 'postgres'): void {
  let dir: string;
  let env: Record<string, string>;
  let server: ServerProcess;
  let nightlySecret: string;
  let signerKey: CryptoKey;

  async function cli(args: string[], input?: string): Promise<string> {
    const result = await runCli(args, env, input);
    expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
    return result.stdout;
  }

  function secretFrom(stdout: string): string {
    const match = /client_secret \(shown only once\): (\S+)/.exec(stdout);
    expect(match).not.toBeNull();
    return match![1]!;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'latchkey-machines-'));
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
    await cli(['apis', 'add', reports, '--name', 'Reports', '--scope', 'read:reports', '--scope', 'write:reports']);
    await cli(['roles', 'add', 'analyst', '--permission', `${reports}:read:reports`, '--description', 'Reads reports']);
    await cli(['users', 'add', 'erin', '--email', 'erin@example.com', '--password-stdin'], 'erin-password');
    await cli(['users', 'grant', 'erin', 'analyst']);
    await cli(['clients', 'add', 'tv', '--grant-type', 'device_code']);
    nightlySecret = secretFrom(await cli(['clients', 'add', 'nightly', '--confidential', '--grant-type', 'client_credentials']));
    await cli(['clients', 'grant', 'nightly', reports, '--scope', 'read:reports']);

    const pair = await generateKeyPair('RS256');
    signerKey = pair.privateKey;
    writeFileSync(
      join(dir, 'signer.jwks.json'),
      JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'signer-1', alg: 'RS256', use: 'sig' }] }),
    );
    await cli(['clients', 'add', 'signer', '--jwks-file', join(dir, 'signer.jwks.json'), '--grant-type', 'client_credentials']);
    await cli(['clients', 'grant', 'signer', reports, '--scope', 'read:reports', '--scope', 'write:reports']);
    server = await startServerProcess({ ...env, LATCHKEY_DEVICE_INTERVAL: '1' });
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function verified(token: string) {
    const jwks = createRemoteJWKSet(new URL(`${server.base}/.well-known/jwks.json`));
    return (await jwtVerify(token, jwks, { issuer: server.base, typ: 'at+jwt' })).payload;
  }

  describe('client_credentials with openid-client', () => {
    it('client_secret_basic: a token whose subject is the machine, with the granted scope, and no refresh token', async () => {
      const config = await client.discovery(new URL(server.base), 'nightly', undefined, client.ClientSecretBasic(nightlySecret), {
        execute: [client.allowInsecureRequests],
      });
      expect(config.serverMetadata().grant_types_supported).toContain('client_credentials');
      const tokens = await client.clientCredentialsGrant(config, { scope: 'read:reports', audience: reports });
      expect(tokens.refresh_token).toBeUndefined();
      expect(tokens.id_token).toBeUndefined();
      expect(tokens.scope).toBe('read:reports');
      const claims = await verified(tokens.access_token);
      expect(claims).toMatchObject({ sub: 'nightly', client_id: 'nightly', aud: reports, scope: 'read:reports' });
    });

    it('private_key_jwt: every request signs a fresh assertion, each accepted once', async () => {
      const config = await client.discovery(new URL(server.base), 'signer', undefined, client.PrivateKeyJwt(signerKey), {
        execute: [client.allowInsecureRequests],
      });
      expect(config.serverMetadata().token_endpoint_auth_methods_supported).toContain('private_key_jwt');
      const first = await client.clientCredentialsGrant(config, { audience: reports });
      expect((await verified(first.access_token)).scope).toBe('read:reports write:reports');
      const second = await client.clientCredentialsGrant(config, { audience: reports, scope: 'write:reports' });
      expect((await verified(second.access_token)).sub).toBe('signer');
    });

    it('a machine asking for an ungranted scope gets invalid_scope', async () => {
      const config = await client.discovery(new URL(server.base), 'nightly', undefined, client.ClientSecretBasic(nightlySecret), {
        execute: [client.allowInsecureRequests],
      });
      const refused = await client.clientCredentialsGrant(config, { scope: 'write:reports', audience: reports }).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(client.ResponseBodyError);
      expect((refused as client.ResponseBodyError).error).toBe('invalid_scope');
    });

    it('rotate-secret --keep-old-for: both secrets work during the overlap; disable stops the client, enable lets it back', async () => {
      const fresh = secretFrom(await cli(['clients', 'rotate-secret', 'nightly', '--keep-old-for', '300']));
      for (const secret of [nightlySecret, fresh]) {
        const config = await client.discovery(new URL(server.base), 'nightly', undefined, client.ClientSecretBasic(secret), {
          execute: [client.allowInsecureRequests],
        });
        expect((await client.clientCredentialsGrant(config, { audience: reports })).access_token).toBeTruthy();
      }
      await cli(['clients', 'disable', 'nightly']);
      const config = await client.discovery(new URL(server.base), 'nightly', undefined, client.ClientSecretBasic(fresh), {
        execute: [client.allowInsecureRequests],
      });
      const refused = await client.clientCredentialsGrant(config, { audience: reports }).catch((err: unknown) => err);
      // A 401 with a challenge: openid-client reports the challenge (RFC 6749 §5.2 invalid_client).
      expect(refused).toBeInstanceOf(client.WWWAuthenticateChallengeError);
      expect((refused as client.WWWAuthenticateChallengeError).status).toBe(401);
      expect(await (refused as client.WWWAuthenticateChallengeError).response.json()).toMatchObject({ error: 'invalid_client' });
      await cli(['clients', 'enable', 'nightly']);
      expect((await client.clientCredentialsGrant(config, { audience: reports })).access_token).toBeTruthy();
      const listed = JSON.parse(await cli(['clients', 'list', '--json'])) as { client_id: string; authentication: string; api_grants: unknown[] }[];
      expect(listed.find((c) => c.client_id === 'signer')).toMatchObject({
        authentication: 'private_key_jwt',
        api_grants: [{ api: reports, scopes: ['read:reports', 'write:reports'] }],
      });
    });
  });

  // The person's side and the CLI's refusals do not depend on the store: once, on SQLite.
  if (database === 'sqlite')
    describe('a person’s token carries what their role allows', () => {
      it('erin (analyst) asks for read and write through the device flow and gets read, with roles', async () => {
        const start = await fetch(`${server.base}/oauth/device/code`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ client_id: 'tv', scope: 'openid read:reports write:reports', audience: reports }),
        });
        expect(start.status).toBe(200);
        const device = (await start.json()) as { device_code: string; verification_uri_complete: string };
        const url = new URL(device.verification_uri_complete);
        const result = await actOnDeviceCode(
          new Browser(fetchTransport(server.base)),
          url.pathname + url.search,
          { username: 'erin', password: 'erin-password' },
          'allow',
        );
        expect(result.status).toBe(200);
        const poll = await fetch(`${server.base}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: device.device_code, client_id: 'tv' }),
        });
        const body = (await poll.json()) as { access_token: string; scope: string };
        expect(body.scope).toBe('openid read:reports');
        expect(await verified(body.access_token)).toMatchObject({ scope: 'openid read:reports', roles: ['analyst'], aud: reports });

        const roles = JSON.parse(await cli(['roles', 'list', '--json'])) as { name: string; members: number; permissions: string[]; built_in: boolean }[];
        expect(roles).toEqual(
          expect.arrayContaining([
            expect.objectContaining({ name: 'admin', built_in: true }),
            expect.objectContaining({ name: 'analyst', members: 1, permissions: [`${reports}:read:reports`] }),
          ]),
        );
        await cli(['users', 'revoke', 'erin', 'analyst']);
        const users = JSON.parse(await cli(['users', 'list', '--json'])) as { username: string; roles: string[] }[];
        expect(users.find((u) => u.username === 'erin')?.roles).toEqual([]);
      });

      it('CLI refusals are clear: an unknown permission, the built-in admin role, a scope the API does not declare', async () => {
        const unknown = await runCli(['roles', 'add', 'x', '--permission', 'https://nowhere.example.com:read'], env);
        expect(unknown.code).toBe(2);
        expect(unknown.stderr).toContain('does not start with a registered API');
        const undeclared = await runCli(['roles', 'add', 'y', '--permission', `${reports}:delete:reports`], env);
        expect(undeclared.stderr).toContain('declares no scope');
        const admin = await runCli(['roles', 'remove', 'admin'], env);
        expect(admin.code).toBe(1);
        expect(admin.stderr).toContain('built in');
        const grant = await runCli(['clients', 'grant', 'nightly', reports, '--scope', 'delete:reports'], env);
        expect(grant.code).toBe(1);
        expect(grant.stderr).toContain('declares no scope');
        const both = await runCli(['clients', 'add', 'z', '--confidential', '--jwks-uri', 'https://keys.example.com/jwks'], env);
        expect(both.code).toBe(1);
        const publicMachine = await runCli(['clients', 'add', 'p', '--grant-type', 'client_credentials'], env);
        expect(publicMachine.stderr).toContain('confidential');
      });
    });
}

describe('on SQLite', () => machineClientSuite('sqlite'));
describeWithPostgres('on PostgreSQL (LATCHKEY_TEST_PG_URL)', () => machineClientSuite('postgres'));
