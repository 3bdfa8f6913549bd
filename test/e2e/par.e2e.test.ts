/**
 * Pushed Authorization Requests (RFC 9126) over a real socket and a real SQLite file, driven by a
 * certified relying-party library: openid-client pushes the request (buildAuthorizationUrlWithPAR),
 * the browser carries only client_id and request_uri, and the code, tokens, userinfo and refresh
 * follow as in any Authorization Code flow. The test plays the person's browser with a cookie jar.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import * as client from 'openid-client';
import { main } from '../../src/cli/main.js';
import { addApi, addClient, addUser, testApp, type TestApp } from '../helpers/app.js';
import { Browser, fetchTransport, personAllows } from '../helpers/browser.js';
import { freePort } from '../helpers/process.js';

let t: TestApp;
let base: string;
let dir: string;
let backendSecret: string;
const redirectUri = 'https://rp.example.com/callback';

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-par-'));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  t = await testApp({ LATCHKEY_ISSUER: base }, { path: join(dir, 'latchkey.db') });
  await addUser(t.store, 'alice', 'alice-password');
  await addApi(t.store, 'https://api.example.com', 'Example API');
  const grantTypes = ['authorization_code', 'refresh_token'] as const;
  await addClient(t.store, 'rp', { name: 'Relying Party', redirectUris: [redirectUri], grantTypes: [...grantTypes], requirePar: true });
  backendSecret = (await addClient(t.store, 'backend', { name: 'Backend', redirectUris: [redirectUri], grantTypes: [...grantTypes], confidential: true }))
    .secret!;
  await t.app.listen({ port, host: '127.0.0.1' });
});

afterEach(async () => {
  await t.close();
  rmSync(dir, { recursive: true, force: true });
});

const pathOf = (url: URL) => url.pathname + url.search;

/** Runs `latchkey <args>` through the executable's entry point, in this process, on the test's database. */
async function latchkey(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const code = await main(args, { stdout, stderr, stdin: new PassThrough(), env: { LATCHKEY_DB: join(dir, 'latchkey.db'), LATCHKEY_ISSUER: base } });
  return { code, stdout: out, stderr: err };
}

/** The person's part: open the authorization URL, sign in, allow; returns the redirect to the client. */

describe('Pushed Authorization Requests with openid-client (RFC 9126)', () => {
  it('public client held to PAR: discovery, PAR, the code flow with PKCE, state and nonce, userinfo and refresh', async () => {
    const config = await client.discovery(new URL(base), 'rp', undefined, client.None(), { execute: [client.allowInsecureRequests] });
    expect(config.serverMetadata()).toMatchObject({ pushed_authorization_request_endpoint: `${base}/oauth/par`, require_pushed_authorization_requests: false });

    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = await client.buildAuthorizationUrlWithPAR(config, {
      redirect_uri: redirectUri,
      scope: 'openid email profile offline_access',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    // The browser sees only the client and the reference: nothing of the request itself.
    expect(url.origin + url.pathname).toBe(`${base}/authorize`);
    expect([...url.searchParams.keys()].sort()).toEqual(['client_id', 'request_uri']);
    expect(url.searchParams.get('request_uri')).toMatch(/^urn:ietf:params:oauth:request_uri:/);

    const browser = new Browser(fetchTransport(base));
    const callback = await personAllows(browser, url, 'alice', 'alice-password');
    expect(callback.searchParams.get('iss')).toBe(base);
    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    });
    expect(tokens.scope).toBe('openid email profile offline_access');
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({ iss: base, aud: 'rp', nonce, email: 'alice@example.com' });

    const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
    expect(info).toMatchObject({ sub: claims.sub, email: 'alice@example.com', preferred_username: 'alice' });

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).toBeTruthy();
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);

    // The request_uri was spent by the first visit: opening it again leads nowhere.
    const replay = await browser.get(pathOf(url));
    expect(replay.status).toBe(400);
    expect(replay.location).toBeUndefined();
  });

  it('a client held to PAR that sends a plain authorization request gets invalid_request back, which openid-client reports', async () => {
    const config = await client.discovery(new URL(base), 'rp', undefined, client.None(), { execute: [client.allowInsecureRequests] });
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'openid',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const res = await new Browser(fetchTransport(base)).get(pathOf(url));
    expect(res.status).toBe(302);
    const error = await client.authorizationCodeGrant(config, new URL(res.location!), { pkceCodeVerifier: verifier, expectedState: state }).then(
      () => undefined,
      (err: unknown) => err as Error & { error?: string; error_description?: string },
    );
    expect(error).toBeInstanceOf(client.AuthorizationResponseError);
    expect(error).toMatchObject({ error: 'invalid_request', error_description: 'This client must use pushed authorization requests.' });
  });

  it('confidential client with client_secret_basic: PAR authenticates it, and the code flow and userinfo follow', async () => {
    const config = await client.discovery(new URL(base), 'backend', backendSecret, client.ClientSecretBasic(backendSecret), {
      execute: [client.allowInsecureRequests],
    });
    const state = client.randomState();
    const nonce = client.randomNonce();
    const verifier = client.randomPKCECodeVerifier();
    const url = await client.buildAuthorizationUrlWithPAR(config, {
      redirect_uri: redirectUri,
      scope: 'openid profile',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    const callback = await personAllows(new Browser(fetchTransport(base)), url, 'alice', 'alice-password');
    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    });
    expect(tokens.claims()).toMatchObject({ aud: 'backend', name: 'Alice Example' });
    expect(await client.fetchUserInfo(config, tokens.access_token, tokens.claims()!.sub)).toMatchObject({ name: 'Alice Example' });
  });

  it('a wrong client secret: openid-client gets 401 invalid_client with a Basic challenge from the PAR endpoint, and no request_uri', async () => {
    const config = await client.discovery(new URL(base), 'backend', 'lk_cs_wrong', client.ClientSecretBasic('lk_cs_wrong'), {
      execute: [client.allowInsecureRequests],
    });
    const error = await client.buildAuthorizationUrlWithPAR(config, { redirect_uri: redirectUri, scope: 'openid', state: client.randomState() }).then(
      () => undefined,
      (err: unknown) => err as client.WWWAuthenticateChallengeError,
    );
    // The challenge comes first in openid-client's eyes; the body is the RFC 6749 §5.2 error.
    expect(error).toBeInstanceOf(client.WWWAuthenticateChallengeError);
    expect(error!.status).toBe(401);
    expect(error!.cause[0]).toMatchObject({ scheme: 'basic' });
    expect(await error!.response.json()).toMatchObject({ error: 'invalid_client' });
  });

  it('latchkey clients add --require-par: listed as such, refused a plain request, served through PAR', async () => {
    const added = await latchkey(['clients', 'add', 'portal', '--name', 'Portal', '--redirect-uri', redirectUri, '--require-par']);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stderr).toContain('Registered client portal (public; grants: authorization_code, refresh_token; pushed authorization requests required)');
    const listed = JSON.parse((await latchkey(['clients', 'list', '--json'])).stdout) as Array<{ client_id: string; require_par: boolean }>;
    expect(listed.find((c) => c.client_id === 'portal')).toMatchObject({ require_par: true });
    expect(listed.find((c) => c.client_id === 'backend')).toMatchObject({ require_par: false });
    expect((await latchkey(['clients', 'list'])).stdout).toMatch(/portal\s+Portal\s+public, PAR required\s/);

    const config = await client.discovery(new URL(base), 'portal', undefined, client.None(), { execute: [client.allowInsecureRequests] });
    const verifier = client.randomPKCECodeVerifier();
    const challenge = await client.calculatePKCECodeChallenge(verifier);
    const state = client.randomState();
    const plain = await new Browser(fetchTransport(base)).get(
      pathOf(
        client.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256', state }),
      ),
    );
    expect(new URL(plain.location!).searchParams.get('error')).toBe('invalid_request');
    const url = await client.buildAuthorizationUrlWithPAR(config, {
      redirect_uri: redirectUri,
      scope: 'openid',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state,
    });
    const tokens = await client.authorizationCodeGrant(config, await personAllows(new Browser(fetchTransport(base)), url, 'alice', 'alice-password'), {
      pkceCodeVerifier: verifier,
      expectedState: state,
      idTokenExpected: true,
    });
    expect(tokens.claims()).toMatchObject({ aud: 'portal' });

    // Only /authorize is concerned: a client without the authorization_code grant is warned.
    const device = await latchkey(['clients', 'add', 'kiosk', '--grant-type', 'device_code', '--require-par']);
    expect(device.code).toBe(0);
    expect(device.stderr).toContain('warning: --require-par only concerns /authorize');
  });
});
