import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose';
import type { UserRecord } from '../../src/store/store.js';
import { addApi, addClient, addUser, form, pkcePair, testApp, type TestApp } from '../helpers/app.js';
import { Browser, injectTransport, signIn } from '../helpers/browser.js';
import { refreshTokenKey } from '../../src/oauth/refresh_tokens.js';

let t: TestApp;
let alice: UserRecord;
let browser: Browser;
let webSecret: string;
const cb = 'https://app.example.com/cb';

beforeEach(async () => {
  t = await testApp();
  alice = await addUser(t.store, 'alice', 'alice-password');
  await addApi(t.store, 'https://api.example.com', 'Example API');
  const grantTypes = ['authorization_code', 'refresh_token'] as const;
  await addClient(t.store, 'spa', { redirectUris: [cb], grantTypes: [...grantTypes], firstParty: true });
  await addClient(t.store, 'other', { redirectUris: [cb], grantTypes: [...grantTypes], firstParty: true });
  await addClient(t.store, 'legacy', { redirectUris: [cb], grantTypes: [...grantTypes], firstParty: true, requirePkce: false });
  webSecret = (await addClient(t.store, 'server', { redirectUris: [cb], grantTypes: [...grantTypes], firstParty: true, confidential: true })).secret!;
  browser = new Browser(injectTransport(t.app));
  await signIn(browser, await browser.get('/login'), 'alice', 'alice-password');
});
afterEach(() => t.close());

/** Runs /authorize for a signed-in person and returns the code. */
async function obtainCode(clientId: string, options: { pkce?: boolean; scope?: string; nonce?: string; audience?: string } = {}) {
  const pkce = pkcePair();
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: cb,
    scope: options.scope ?? 'openid email profile offline_access',
    state: 's',
  });
  if (options.pkce !== false) {
    query.set('code_challenge', pkce.challenge);
    query.set('code_challenge_method', 'S256');
  }
  if (options.nonce) query.set('nonce', options.nonce);
  if (options.audience) query.set('audience', options.audience);
  const res = await browser.get(`/authorize?${query}`);
  expect(res.status).toBe(302);
  const code = new URL(res.location!).searchParams.get('code');
  expect(code).toMatch(/^lk_ac_/);
  return { code: code!, verifier: pkce.verifier };
}

function redeem(fields: Record<string, string>, headers: Record<string, string> = {}) {
  const f = form({ grant_type: 'authorization_code', redirect_uri: cb, ...fields });
  return t.app.inject({ method: 'POST', url: '/oauth/token', payload: f.payload, headers: { ...f.headers, ...headers } });
}

async function expectError(res: Awaited<ReturnType<typeof redeem>>, status: number, error: string) {
  expect(res.statusCode).toBe(status);
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.json().error).toBe(error);
}

describe('POST /oauth/token grant_type=authorization_code', () => {
  it('exchanges a code for an access token, refresh token and a verifiable id_token', async () => {
    const { code, verifier } = await obtainCode('spa', { nonce: 'nonce-42', audience: 'https://api.example.com' });
    const res = await redeem({ client_id: 'spa', code, code_verifier: verifier });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(['access_token', 'expires_in', 'id_token', 'refresh_token', 'scope', 'token_type']);
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 86400, scope: 'openid email profile offline_access' });

    const jwks = createLocalJWKSet((await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json());
    const now = Math.floor(t.clock());
    const { payload: idToken, protectedHeader } = await jwtVerify(body.id_token, jwks, {
      issuer: 'http://latchkey.test',
      audience: 'spa',
      currentDate: new Date(now * 1000),
    });
    expect(protectedHeader.alg).toBe('RS256');
    expect(idToken).toMatchObject({
      iss: 'http://latchkey.test',
      sub: alice.id,
      aud: 'spa',
      iat: now,
      exp: now + 3600,
      auth_time: now,
      nonce: 'nonce-42',
      email: 'alice@example.com',
      email_verified: true,
      name: 'Alice Example',
      preferred_username: 'alice',
    });
    const digest = createHash('sha256').update(body.access_token).digest();
    expect(idToken.at_hash).toBe(digest.subarray(0, 16).toString('base64url'));

    const { payload: access } = await jwtVerify(body.access_token, jwks, {
      audience: 'https://api.example.com',
      typ: 'at+jwt',
      currentDate: new Date(now * 1000),
    });
    expect(access).toMatchObject({ sub: alice.id, client_id: 'spa', scope: 'openid email profile offline_access' });
  });

  it('the id_token has only the claims the scopes ask for, and no nonce when none was sent', async () => {
    const { code, verifier } = await obtainCode('spa', { scope: 'openid' });
    const claims = decodeJwt((await redeem({ client_id: 'spa', code, code_verifier: verifier })).json().id_token);
    // acr and amr always (how the person signed in, RFC 8176): here a password alone;
    // sid, the browser session (RP-Initiated and Back-Channel Logout).
    expect(Object.keys(claims).sort()).toEqual(['acr', 'amr', 'at_hash', 'aud', 'auth_time', 'exp', 'iat', 'iss', 'sid', 'sub']);
    expect(claims).toMatchObject({ amr: ['pwd'], acr: 'urn:latchkey:sfa' });
  });

  it('no id_token without openid, no refresh token without offline_access', async () => {
    const { code, verifier } = await obtainCode('spa', { scope: 'email' });
    const body = (await redeem({ client_id: 'spa', code, code_verifier: verifier })).json();
    expect(body.id_token).toBeUndefined();
    expect(body.refresh_token).toBeUndefined();
  });

  it('a second redemption → invalid_grant, and the tokens of the first are revoked', async () => {
    const { code, verifier } = await obtainCode('spa');
    const first = (await redeem({ client_id: 'spa', code, code_verifier: verifier })).json();
    expect(await t.store.findRefreshToken(refreshTokenKey(first.refresh_token))).toBeDefined();
    await expectError(await redeem({ client_id: 'spa', code, code_verifier: verifier }), 400, 'invalid_grant');
    expect((await t.store.findRefreshToken(refreshTokenKey(first.refresh_token)))?.revokedAt).toBe(Math.floor(t.clock()));
    expect(await t.store.isAccessTokenRevoked(String(decodeJwt(first.access_token).jti))).toBe(true);
  });

  it('ten simultaneous redemptions: exactly one succeeds, and the replays revoke what it issued', async () => {
    for (let round = 0; round < 5; round++) {
      const { code, verifier } = await obtainCode('spa');
      const results = await Promise.all(Array.from({ length: 10 }, () => redeem({ client_id: 'spa', code, code_verifier: verifier })));
      const winners = results.filter((r) => r.statusCode === 200);
      expect(winners).toHaveLength(1);
      expect(results.filter((r) => r.statusCode === 400 && r.json().error === 'invalid_grant')).toHaveLength(9);
      // Even a refresh token inserted after a replay revoked its family is born revoked.
      expect((await t.store.findRefreshToken(refreshTokenKey(winners[0]!.json().refresh_token)))?.revokedAt).toBeDefined();
    }
  });

  const refusals: Array<[string, (c: { code: string; verifier: string }) => Record<string, string>]> = [
    ['a wrong code_verifier', (c) => ({ client_id: 'spa', code: c.code, code_verifier: pkcePair().verifier })],
    ['a missing code_verifier', (c) => ({ client_id: 'spa', code: c.code })],
    ['a malformed code_verifier', (c) => ({ client_id: 'spa', code: c.code, code_verifier: 'short' })],
    ['a different redirect_uri', (c) => ({ client_id: 'spa', code: c.code, code_verifier: c.verifier, redirect_uri: 'https://app.example.com/other' })],
    ['the code of another client', (c) => ({ client_id: 'other', code: c.code, code_verifier: c.verifier })],
    ['an unknown code', (c) => ({ client_id: 'spa', code: 'lk_ac_unknown', code_verifier: c.verifier })],
  ];
  for (const [name, fields] of refusals) {
    it(`${name} → invalid_grant, and the code still works for the rightful request`, async () => {
      const c = await obtainCode('spa');
      await expectError(await redeem(fields(c)), 400, 'invalid_grant');
      expect((await redeem({ client_id: 'spa', code: c.code, code_verifier: c.verifier })).statusCode).toBe(200);
    });
  }

  it('a missing redirect_uri → invalid_request', async () => {
    const { code, verifier } = await obtainCode('spa');
    const f = form({ grant_type: 'authorization_code', client_id: 'spa', code, code_verifier: verifier });
    await expectError(await t.app.inject({ method: 'POST', url: '/oauth/token', ...f }), 400, 'invalid_request');
  });

  it('an expired code (60 s) → invalid_grant', async () => {
    const { code, verifier } = await obtainCode('spa');
    t.clock.advance(60);
    await expectError(await redeem({ client_id: 'spa', code, code_verifier: verifier }), 400, 'invalid_grant');
  });

  it('the approving user disabled meanwhile → invalid_grant', async () => {
    const { code, verifier } = await obtainCode('spa');
    await t.store.setUserDisabled('alice', true, Math.floor(t.clock()));
    await expectError(await redeem({ client_id: 'spa', code, code_verifier: verifier }), 400, 'invalid_grant');
  });

  describe('a client registered with --no-pkce (the seed’s literal flow)', () => {
    it('redeems a code requested without PKCE', async () => {
      const { code } = await obtainCode('legacy', { pkce: false });
      expect((await redeem({ client_id: 'legacy', code })).statusCode).toBe(200);
    });

    it('a code_verifier for a code issued without a challenge is refused (no downgrade)', async () => {
      const { code } = await obtainCode('legacy', { pkce: false });
      await expectError(await redeem({ client_id: 'legacy', code, code_verifier: pkcePair().verifier }), 400, 'invalid_grant');
    });

    it('still gets PKCE checked when it sends a challenge', async () => {
      const { code } = await obtainCode('legacy');
      await expectError(await redeem({ client_id: 'legacy', code }), 400, 'invalid_grant');
    });
  });

  describe('confidential clients', () => {
    it('authenticate with client_secret_basic', async () => {
      const { code, verifier } = await obtainCode('server');
      const basic = Buffer.from(`server:${webSecret}`).toString('base64');
      expect((await redeem({ code, code_verifier: verifier }, { authorization: `Basic ${basic}` })).statusCode).toBe(200);
    });

    it('authenticate with client_secret_post', async () => {
      const { code, verifier } = await obtainCode('server');
      expect((await redeem({ client_id: 'server', client_secret: webSecret, code, code_verifier: verifier })).statusCode).toBe(200);
    });

    it('a wrong secret → 401 invalid_client with WWW-Authenticate, and the code is not spent', async () => {
      const { code, verifier } = await obtainCode('server');
      const basic = Buffer.from('server:lk_cs_wrong').toString('base64');
      const res = await redeem({ code, code_verifier: verifier }, { authorization: `Basic ${basic}` });
      await expectError(res, 401, 'invalid_client');
      expect(res.headers['www-authenticate']).toMatch(/^Basic realm="latchkey"/);
      expect((await redeem({ client_id: 'server', client_secret: webSecret, code, code_verifier: verifier })).statusCode).toBe(200);
    });

    it('no secret → 401 invalid_client', async () => {
      const { code, verifier } = await obtainCode('server');
      await expectError(await redeem({ client_id: 'server', code, code_verifier: verifier }), 401, 'invalid_client');
    });
  });
});
