/**
 * The Authorization Code flow over a real socket and a real SQLite file, driven by a certified
 * relying-party library (openid-client): discovery, PKCE, state, nonce, the iss response
 * parameter and id_token validation. The test plays the person's browser with a cookie jar.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as client from 'openid-client';
import { addApi, addClient, addUser, testApp, type TestApp } from '../helpers/app.js';
import { Browser, fetchTransport, personAllows } from '../helpers/browser.js';
import { freePort } from '../helpers/process.js';

let t: TestApp;
let base: string;
let dir: string;
let serverSecret: string;
const redirectUri = 'https://rp.example.com/callback';
const signedOutUri = 'https://rp.example.com/signed-out';

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-ac-'));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  t = await testApp({ LATCHKEY_ISSUER: base }, { path: join(dir, 'latchkey.db') });
  await addUser(t.store, 'alice', 'alice-password');
  await addApi(t.store, 'https://api.example.com', 'Example API');
  const grantTypes = ['authorization_code', 'refresh_token'] as const;
  await addClient(t.store, 'rp', { name: 'Relying Party', redirectUris: [redirectUri], grantTypes: [...grantTypes], postLogoutRedirectUris: [signedOutUri] });
  await addClient(t.store, 'seed', { name: 'Seed App', redirectUris: [redirectUri], grantTypes: [...grantTypes], requirePkce: false });
  serverSecret = (await addClient(t.store, 'backend', { name: 'Backend', redirectUris: [redirectUri], grantTypes: [...grantTypes], confidential: true }))
    .secret!;
  await t.app.listen({ port, host: '127.0.0.1' });
});

afterEach(async () => {
  await t.close();
  rmSync(dir, { recursive: true, force: true });
});

const pathOf = (url: URL) => url.pathname + url.search;

/** The person's part: open the authorization URL, sign in, allow; returns the redirect to the client. */

describe('RP-Initiated Logout with openid-client', () => {
  async function signedInWithIdToken(browser: Browser) {
    const config = await client.discovery(new URL(base), 'rp', undefined, client.None(), { execute: [client.allowInsecureRequests] });
    expect(config.serverMetadata().end_session_endpoint).toBe(`${base}/logout`);
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'openid',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const tokens = await client.authorizationCodeGrant(config, await personAllows(browser, url, 'alice', 'alice-password'), {
      pkceCodeVerifier: verifier,
      expectedState: state,
      idTokenExpected: true,
    });
    return { config, idToken: tokens.id_token! };
  }

  it('buildEndSessionUrl with the id_token and a registered address: signed out at once, back with state', async () => {
    const browser = new Browser(fetchTransport(base));
    const { config, idToken } = await signedInWithIdToken(browser);
    const logout = client.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: signedOutUri, state: 'bye-1' });
    const res = await browser.get(pathOf(logout));
    expect(res.status).toBe(303);
    expect(res.location).toBe(`${signedOutUri}?state=bye-1`);
    expect((await browser.get('/login')).status).toBe(200); // the sign-in form again: signed out
  });

  it('an address that is not registered is never redirected to, and the person stays signed in', async () => {
    const browser = new Browser(fetchTransport(base));
    const { config, idToken } = await signedInWithIdToken(browser);
    const logout = client.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: 'https://evil.example/after', state: 's' });
    const res = await browser.get(pathOf(logout));
    expect(res.status).toBe(400);
    expect(res.location).toBeUndefined();
    expect((await browser.get('/login')).status).toBe(303);
  });
});

describe('Authorization Code flow with openid-client', () => {
  it('public client: discovery, PKCE, state, nonce, iss and id_token validation', async () => {
    const config = await client.discovery(new URL(base), 'rp', undefined, client.None(), { execute: [client.allowInsecureRequests] });
    expect(config.serverMetadata().authorization_endpoint).toBe(`${base}/authorize`);

    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'openid email profile offline_access',
      audience: 'https://api.example.com',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    const browser = new Browser(fetchTransport(base));
    const callback = await personAllows(browser, url, 'alice', 'alice-password');
    expect(callback.searchParams.get('iss')).toBe(base);

    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    });
    expect(tokens.token_type).toBe('bearer'); // openid-client normalises the case
    expect(tokens.refresh_token).toMatch(/^lk_rt_/);
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({ iss: base, aud: 'rp', nonce, email: 'alice@example.com', preferred_username: 'alice' });

    // A second sign-in of the same person reuses the session and the remembered consent.
    const again = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'openid email',
      audience: 'https://api.example.com',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const direct = await browser.get(pathOf(again));
    expect(direct.status).toBe(302);
    expect(new URL(direct.location!).searchParams.get('code')).toMatch(/^lk_ac_/);
  });

  it('openid-client refuses a response whose state was tampered with', async () => {
    const config = await client.discovery(new URL(base), 'rp', undefined, client.None(), { execute: [client.allowInsecureRequests] });
    const verifier = client.randomPKCECodeVerifier();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'openid',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state: 'expected-state',
    });
    const callback = await personAllows(new Browser(fetchTransport(base)), url, 'alice', 'alice-password');
    callback.searchParams.set('state', 'forged');
    const error = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: 'expected-state' }).then(
      () => undefined,
      (err: unknown) => err as Error & { cause?: { message?: string } },
    );
    expect(error).toBeDefined();
    expect(`${error!.message} ${JSON.stringify(error!.cause)} ${error!.cause?.message ?? ''}`).toMatch(/state/);
  });

  it('confidential client with client_secret_basic', async () => {
    const config = await client.discovery(new URL(base), 'backend', serverSecret, client.ClientSecretBasic(serverSecret), {
      execute: [client.allowInsecureRequests],
    });
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'openid profile',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const callback = await personAllows(new Browser(fetchTransport(base)), url, 'alice', 'alice-password');
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, idTokenExpected: true });
    expect(tokens.claims()).toMatchObject({ aud: 'backend', name: 'Alice Example' });
  });

  it('the seed’s literal flow: a --no-pkce client, code exchanged with client_id, code and redirect_uri only', async () => {
    const authorize = new URL(`${base}/authorize`);
    authorize.search = new URLSearchParams({
      response_type: 'code',
      client_id: 'seed',
      redirect_uri: redirectUri,
      scope: 'openid email profile offline_access',
      audience: 'https://api.example.com',
      state: 'seed-state',
    }).toString();
    const callback = await personAllows(new Browser(fetchTransport(base)), authorize, 'alice', 'alice-password');
    expect(callback.origin + callback.pathname).toBe(redirectUri);
    expect(callback.searchParams.get('state')).toBe('seed-state');

    const res = await fetch(`${base}/oauth/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'authorization_code', client_id: 'seed', code: callback.searchParams.get('code')!, redirect_uri: redirectUri }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['access_token', 'expires_in', 'id_token', 'refresh_token', 'scope', 'token_type']);
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 86400, scope: 'openid email profile offline_access' });
  });
});
