/**
 * Dynamic client registration end to end: an operator makes an initial access token
 * with the `latchkey clients registration-token` command (its real entry point, on the server's
 * SQLite file), and a certified relying-party library, openid-client v6, registers itself with it
 * over a real socket (RFC 7591) — then signs a person in with the Authorization Code flow and PKCE,
 * or, as a machine, gets client_credentials tokens once the operator grants it an API. The
 * registration access token reads and deletes the registration (RFC 7592); the initial token
 * cannot be used twice.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import * as client from 'openid-client';
import { main } from '../../src/cli/main.js';
import { sha256 } from '../../src/crypto/secrets.js';
import { addApi, addUser, testApp, type TestApp } from '../helpers/app.js';
import { Browser, fetchTransport, inputValue, signIn, type BrowserResponse } from '../helpers/browser.js';
import { freePort } from '../helpers/process.js';

let t: TestApp;
let base: string;
let dir: string;
let env: Record<string, string>;
const redirectUri = 'https://rp.example.com/callback';
const reports = 'https://reports.example.com';

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-dcr-'));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  env = { LATCHKEY_DB: join(dir, 'latchkey.db'), LATCHKEY_ISSUER: base };
  t = await testApp({ LATCHKEY_ISSUER: base }, { path: env.LATCHKEY_DB });
  // The command dates the token by this machine's clock, as the server would read it.
  t.clock.set(Math.floor(Date.now() / 1000));
  await addUser(t.store, 'alice', 'alice-password');
  await addApi(t.store, reports, 'Reports', [], ['read:reports']);
  await t.app.listen({ port, host: '127.0.0.1' });
});

afterEach(async () => {
  await t.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs `latchkey <args>` through the executable's entry point, in this process. */
async function latchkey(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const code = await main(args, { stdout, stderr, stdin: new PassThrough(), env: { ...env } });
  return { code, stdout: out, stderr: err };
}

async function registrationToken(args: string[] = []): Promise<string> {
  const result = await latchkey(['clients', 'registration-token', ...args]);
  expect(result.code, result.stderr).toBe(0);
  expect(result.stdout).toMatch(/^lk_it_[A-Za-z0-9_-]{43}\n$/);
  return result.stdout.trim();
}

const pathOf = (url: URL) => url.pathname + url.search;

async function personAllows(browser: Browser, authorizationUrl: URL): Promise<URL> {
  let page: BrowserResponse = await browser.get(pathOf(authorizationUrl));
  expect(page.status).toBe(303);
  const login = await browser.get(page.location!);
  page = await signIn(browser, login, 'alice', 'alice-password');
  page = await browser.get(page.location!);
  // A registered client is never first party: the person is asked.
  expect(page.status).toBe(200);
  expect(page.body).toContain('Allow Registered RP to access your account?');
  page = await browser.post('/authorize/decision', {
    csrf_token: inputValue(page.body, 'csrf_token')!,
    interaction: inputValue(page.body, 'interaction')!,
    decision: 'allow',
  });
  expect([302, 303]).toContain(page.status);
  return new URL(page.location!);
}

describe('latchkey clients registration-token', () => {
  it('prints a token once, stores only its digest with the expiry asked for, and audits it', async () => {
    const before = Math.floor(Date.now() / 1000);
    const token = await registrationToken(['--expires-in', '600']);
    const stored = await t.store.findRegistrationToken(sha256(token));
    expect(stored).toMatchObject({ usedAt: undefined, clientId: undefined });
    expect(stored!.expiresAt - stored!.createdAt).toBe(600);
    expect(stored!.createdAt).toBeGreaterThanOrEqual(before);
    const defaulted = await t.store.findRegistrationToken(sha256(await registrationToken()));
    expect(defaulted!.expiresAt - defaulted!.createdAt).toBe(3600);
    expect(JSON.stringify(t.store.db.prepare('SELECT * FROM registration_tokens').all())).not.toContain(token);
    const events = await t.store.listAuditEvents({ limit: 10, event: 'client.registration_token_created' });
    expect(events).toHaveLength(2);
    expect(events[0]).toMatchObject({ actor: 'cli' });
    expect(JSON.stringify(events)).not.toContain(token);
  });

  it('--expires-in must be 1 second to 30 days', async () => {
    for (const value of ['0', '-5', '2592001', 'soon', '1.5']) {
      const result = await latchkey(['clients', 'registration-token', '--expires-in', value]);
      expect(result.code, value).toBe(2);
      expect(result.stdout).toBe('');
    }
    expect((await latchkey(['clients', 'registration-token', '--expires-in', '2592000'])).code).toBe(0);
    expect(t.store.db.prepare('SELECT count(*) AS n FROM registration_tokens').get()).toEqual({ n: 1 });
  });
});

describe('openid-client dynamicClientRegistration (RFC 7591) with a token from the CLI', () => {
  it('a public client registers, signs a person in with PKCE, refreshes; the initial token cannot register again', async () => {
    const initialAccessToken = await registrationToken();
    const config = await client.dynamicClientRegistration(
      new URL(base),
      {
        client_name: 'Registered RP',
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      },
      client.None(),
      { initialAccessToken, execute: [client.allowInsecureRequests] },
    );
    const metadata = config.clientMetadata();
    expect(metadata.client_id).toMatch(/^dyn_/);
    expect(metadata.client_secret).toBeUndefined();
    expect(metadata.registration_client_uri).toBe(`${base}/oauth/register/${metadata.client_id}`);
    expect(config.serverMetadata().registration_endpoint).toBe(`${base}/oauth/register`);

    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'openid email offline_access',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    const callback = await personAllows(new Browser(fetchTransport(base)), url);
    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    });
    expect(tokens.claims()).toMatchObject({ iss: base, aud: metadata.client_id, email: 'alice@example.com' });
    expect(tokens.refresh_token).toMatch(/^lk_rt_/);
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).toBeTruthy();

    const again = await client
      .dynamicClientRegistration(new URL(base), { redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' }, client.None(), {
        initialAccessToken,
        execute: [client.allowInsecureRequests],
      })
      .catch((err: unknown) => err);
    expect(again).toBeInstanceOf(client.WWWAuthenticateChallengeError);
    expect((again as client.WWWAuthenticateChallengeError).status).toBe(401);
    expect((again as client.WWWAuthenticateChallengeError).cause[0]).toMatchObject({ scheme: 'bearer', parameters: { error: 'invalid_token' } });
  });

  it('without an initial access token the registration is refused', async () => {
    const refused = await client
      .dynamicClientRegistration(new URL(base), { redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' }, client.None(), {
        execute: [client.allowInsecureRequests],
      })
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(client.WWWAuthenticateChallengeError);
    expect((refused as client.WWWAuthenticateChallengeError).status).toBe(401);
  });

  it('invalid metadata is refused with the RFC 7591 error code', async () => {
    const refused = await client
      .dynamicClientRegistration(new URL(base), { redirect_uris: ['http://rp.example.com/callback'] }, undefined, {
        initialAccessToken: await registrationToken(),
        execute: [client.allowInsecureRequests],
      })
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(client.ResponseBodyError);
    expect((refused as client.ResponseBodyError).error).toBe('invalid_redirect_uri');
  });

  it('a machine registers with a secret; the operator grants it an API with the CLI; RFC 7592 read and delete', async () => {
    const config = await client.dynamicClientRegistration(
      new URL(base),
      { client_name: 'Nightly job', grant_types: ['client_credentials'], token_endpoint_auth_method: 'client_secret_basic' },
      undefined,
      { initialAccessToken: await registrationToken(), execute: [client.allowInsecureRequests] },
    );
    const metadata = config.clientMetadata();
    expect(metadata.client_secret).toMatch(/^lk_cs_/);
    const machine = await client.discovery(new URL(base), metadata.client_id, undefined, client.ClientSecretBasic(metadata.client_secret), {
      execute: [client.allowInsecureRequests],
    });

    // Machine grants stay the operator's: nothing until `clients grant`.
    const before = await client.clientCredentialsGrant(machine, { audience: reports }).catch((err: unknown) => err);
    expect((before as client.ResponseBodyError).error).toBe('invalid_target');
    const granted = await latchkey(['clients', 'grant', metadata.client_id, reports, '--scope', 'read:reports']);
    expect(granted.code, granted.stderr).toBe(0);
    const tokens = await client.clientCredentialsGrant(machine, { audience: reports });
    expect(tokens.scope).toBe('read:reports');

    // The operator sees it like any other client.
    const listed = JSON.parse((await latchkey(['clients', 'list', '--json'])).stdout) as { client_id: string; registered: boolean }[];
    expect(listed.find((c) => c.client_id === metadata.client_id)).toMatchObject({ registered: true, name: 'Nightly job' });

    const authorization = { authorization: `Bearer ${metadata.registration_access_token as string}` };
    const read = await fetch(metadata.registration_client_uri as string, { headers: authorization });
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({
      client_id: metadata.client_id,
      grant_types: ['client_credentials'],
      token_endpoint_auth_method: 'client_secret_basic',
    });
    const removed = await fetch(metadata.registration_client_uri as string, { method: 'DELETE', headers: authorization });
    expect(removed.status).toBe(204);
    const after = await client.clientCredentialsGrant(machine, { audience: reports }).catch((err: unknown) => err);
    expect((after as client.WWWAuthenticateChallengeError).status).toBe(401);
  });
});
