/**
 * LATCHKEY_SIGNING_ALG: access tokens signed with RS256, ES256 or EdDSA (node:crypto on the hot
 * path), id_tokens always RS256; every token verifies with jose against the published JWKS, and
 * the endpoints that read access tokens accept them. `keys rotate` replaces every active key.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { generateSigningKey, privateKeyFromPem, signingAlgorithms } from '../../src/crypto/keys.js';
import { signJws, signJwsSync } from '../../src/crypto/jwt_sign.js';
import { importJWK } from 'jose';
import type { UserRecord } from '../../src/store/store.js';
import { addApi, addClient, addUser, form, pkcePair, testApp, type TestApp } from '../helpers/app.js';
import { Browser, injectTransport, signIn } from '../helpers/browser.js';
import { refresh, tokensFor } from '../helpers/flows.js';

describe('signJws (node:crypto) makes JWS that jose verifies', () => {
  for (const alg of signingAlgorithms) {
    it(`${alg}: header, payload and signature`, async () => {
      const generated = generateSigningKey(alg);
      const key = { alg, kid: generated.kid, privateKey: privateKeyFromPem(generated.privateKeyPem) };
      const publicKey = await importJWK({ ...generated.publicJwk }, alg);
      for (const token of [await signJws(key, { sub: 'alice', n: 1 }, 'at+jwt'), signJwsSync(key, { sub: 'alice', n: 1 }, 'at+jwt')]) {
        const { payload, protectedHeader } = await jwtVerify(token, publicKey, { algorithms: [alg], typ: 'at+jwt' });
        expect(protectedHeader).toEqual({ alg, kid: generated.kid, typ: 'at+jwt' });
        expect(payload).toEqual({ sub: 'alice', n: 1 });
      }
      // A tampered payload fails: the signature covers it.
      const [header, , signature] = (await signJws(key, { sub: 'alice' }, 'at+jwt')).split('.');
      const forged = `${header}.${Buffer.from(JSON.stringify({ sub: 'mallory' })).toString('base64url')}.${signature}`;
      await expect(jwtVerify(forged, publicKey, { algorithms: [alg] })).rejects.toThrow();
    });
  }

  it('ES256 signatures are the 64-byte r||s of RFC 7518 §3.4, not DER', async () => {
    const generated = generateSigningKey('ES256');
    const token = signJwsSync({ alg: 'ES256', kid: generated.kid, privateKey: privateKeyFromPem(generated.privateKeyPem) }, { a: 1 }, 'JWT');
    expect(Buffer.from(token.split('.')[2] ?? '', 'base64url')).toHaveLength(64);
  });
});

describe.each(signingAlgorithms)('a server with LATCHKEY_SIGNING_ALG=%s', (alg) => {
  let t: TestApp;
  let alice: UserRecord;
  afterEach(() => t.close());

  async function publishedKeys() {
    return (await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json<JSONWebKeySet>();
  }

  async function setUp() {
    t = await testApp({ LATCHKEY_SIGNING_ALG: alg });
    alice = await addUser(t.store, 'alice', 'alice-password');
    await addClient(t.store, 'tv', { grantTypes: ['device_code', 'refresh_token'] });
    // The API's own server may introspect the tokens issued for it (RFC 7662 §4).
    await addApi(t.store, 'https://api.example.com', 'Example API', ['api']);
  }

  it('signs access tokens with it, publishes its key first and an RS256 key for id_tokens, and accepts its tokens everywhere', async () => {
    await setUp();
    const jwks = await publishedKeys();
    expect(jwks.keys[0]?.alg).toBe(alg);
    expect(new Set(jwks.keys.map((k) => k.alg))).toEqual(new Set([alg, 'RS256']));
    for (const key of jwks.keys) expect(Object.keys(key).some((member) => ['d', 'p', 'q', 'dp', 'dq', 'qi'].includes(member))).toBe(false);

    const tokens = await tokensFor(t, alice, 'tv', { audience: 'https://api.example.com' });
    expect(decodeProtectedHeader(tokens.access_token)).toMatchObject({ alg, typ: 'at+jwt', kid: jwks.keys[0]?.kid });
    const { payload } = await jwtVerify(tokens.access_token, createLocalJWKSet(jwks), { issuer: t.config.issuer, typ: 'at+jwt', algorithms: [alg] });
    expect(payload.sub).toBe(alice.id);

    const userinfo = await t.app.inject({ method: 'GET', url: '/userinfo', headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(userinfo.statusCode).toBe(200);
    expect(userinfo.json().sub).toBe(alice.id);
    const api = await addClient(t.store, 'api', { grantTypes: ['authorization_code'], redirectUris: ['https://api.example.com/cb'], confidential: true });
    const introspection = await t.app.inject({
      method: 'POST',
      url: '/oauth/introspect',
      ...form({ token: tokens.access_token, client_id: 'api', client_secret: api.secret ?? '' }),
    });
    expect(introspection.json().active).toBe(true);

    const refreshed = await refresh(t, 'tv', tokens.refresh_token ?? '');
    expect(refreshed.statusCode).toBe(200);
    expect(decodeProtectedHeader(refreshed.json().access_token).alg).toBe(alg);
  });

  it('signs id_tokens with RS256 whatever the access-token algorithm (OIDC Core §15.1)', async () => {
    await setUp();
    const cb = 'https://app.example.com/cb';
    await addClient(t.store, 'spa', { redirectUris: [cb], grantTypes: ['authorization_code'], firstParty: true });
    const browser = new Browser(injectTransport(t.app));
    await signIn(browser, await browser.get('/login'), 'alice', 'alice-password');
    const pkce = pkcePair();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: 'spa',
      redirect_uri: cb,
      scope: 'openid',
      state: 's',
      code_challenge: pkce.challenge,
      code_challenge_method: 'S256',
    });
    const code = new URL((await browser.get(`/authorize?${query}`)).location ?? '').searchParams.get('code') ?? '';
    const res = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      ...form({ grant_type: 'authorization_code', code, redirect_uri: cb, client_id: 'spa', code_verifier: pkce.verifier }),
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(decodeProtectedHeader(body.access_token).alg).toBe(alg);
    const { protectedHeader } = await jwtVerify(body.id_token, createLocalJWKSet(await publishedKeys()), {
      issuer: t.config.issuer,
      audience: 'spa',
      algorithms: ['RS256'],
    });
    expect(protectedHeader.alg).toBe('RS256');
    const discovery = (await t.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
    expect(discovery.id_token_signing_alg_values_supported).toEqual(['RS256']);
  });

  it('refuses a token whose header names another algorithm than its key (no algorithm confusion)', async () => {
    await setUp();
    const tokens = await tokensFor(t, alice, 'tv');
    const [, payload, signature] = tokens.access_token.split('.');
    const other = alg === 'RS256' ? 'ES256' : 'RS256';
    const kid = decodeProtectedHeader(tokens.access_token).kid;
    const header = Buffer.from(JSON.stringify({ alg: other, kid, typ: 'at+jwt' })).toString('base64url');
    const res = await t.app.inject({ method: 'GET', url: '/userinfo', headers: { authorization: `Bearer ${header}.${payload}.${signature}` } });
    expect(res.statusCode).toBe(401);
  });
});
