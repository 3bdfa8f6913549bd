import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SignJWT } from 'jose';
import { generateKeyPairSync } from 'node:crypto';
import type { UserRecord } from '../../src/store/store.js';
import { addApi, addClient, addUser, form, testApp, type TestApp } from '../helpers/app.js';
import { tokensFor } from '../helpers/flows.js';

let t: TestApp;
let alice: UserRecord;

beforeEach(async () => {
  t = await testApp();
  alice = await addUser(t.store, 'alice');
  await addApi(t.store, 'https://api.example.com');
  await addClient(t.store, 'cli');
});
afterEach(() => t.close());

const get = (headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url: '/userinfo', headers });

describe('GET/POST /userinfo (OIDC Core §5.3, RFC 6750)', () => {
  it('returns sub and the claims the scopes allow', async () => {
    const { access_token } = await tokensFor(t, alice, 'cli');
    const res = await get({ authorization: `Bearer ${access_token}` });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.json()).toEqual({
      sub: alice.id,
      email: 'alice@example.com',
      email_verified: true,
      name: 'Alice Example',
      preferred_username: 'alice',
      // OIDC Core §5.4: updated_at belongs to the profile scope (the user's creation time until changed).
      updated_at: alice.updatedAt,
    });
  });

  it('only sub for the openid scope alone', async () => {
    const { access_token } = await tokensFor(t, alice, 'cli', { scope: 'openid' });
    expect((await get({ authorization: `Bearer ${access_token}` })).json()).toEqual({ sub: alice.id });
  });

  it('accepts a token issued for an API, since it carries openid', async () => {
    const { access_token } = await tokensFor(t, alice, 'cli', { scope: 'openid email', audience: 'https://api.example.com' });
    expect((await get({ authorization: `Bearer ${access_token}` })).json()).toEqual({ sub: alice.id, email: 'alice@example.com', email_verified: true });
  });

  it('POST with the header, or with access_token in the form body (RFC 6750 §2.2)', async () => {
    const { access_token } = await tokensFor(t, alice, 'cli');
    const header = await t.app.inject({ method: 'POST', url: '/userinfo', headers: { authorization: `Bearer ${access_token}` } });
    expect(header.statusCode).toBe(200);
    const body = await t.app.inject({ method: 'POST', url: '/userinfo', ...form({ access_token }) });
    expect(body.statusCode).toBe(200);
    const both = await t.app.inject({
      method: 'POST',
      url: '/userinfo',
      payload: form({ access_token }).payload,
      headers: { ...form({}).headers, authorization: `Bearer ${access_token}` },
    });
    expect(both.statusCode).toBe(400);
    expect(both.headers['www-authenticate']).toContain('error="invalid_request"');
  });

  it('no token → 401 with bare challenges, Bearer and DPoP (RFC 6750 §3.1, RFC 9449 §7.1)', async () => {
    const res = await get();
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="latchkey", DPoP algs="[A-Za-z0-9 ]+"$/);
  });

  it('a malformed, forged or expired token → 401 invalid_token in WWW-Authenticate', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const forged = await new SignJWT({ sub: alice.id, scope: 'openid', client_id: 'cli', jti: 'x' })
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: await t.app.services.signer.activeKid() })
      .setIssuer('http://latchkey.test')
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(privateKey);
    const { access_token } = await tokensFor(t, alice, 'cli');
    for (const token of ['garbage', forged]) {
      const res = await get({ authorization: `Bearer ${token}` });
      expect(res.statusCode).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="latchkey", error="invalid_token", error_description="/);
      expect(res.json().error).toBe('invalid_token');
    }
    t.clock.advance(86400);
    expect((await get({ authorization: `Bearer ${access_token}` })).statusCode).toBe(401);
  });

  it('a token verified before is checked again each time: its expiry, its revocation, and not a byte of it may differ', async () => {
    const { access_token, refresh_token } = await tokensFor(t, alice, 'cli');
    const bearer = { authorization: `Bearer ${access_token}` };
    expect((await get(bearer)).statusCode).toBe(200);
    expect((await get(bearer)).statusCode).toBe(200);
    // The same header and claims with another signature, or the same signature under other claims.
    const [header, payload, signature] = access_token.split('.') as [string, string, string];
    const flipped = `${signature.slice(0, -2)}${signature.at(-2) === 'A' ? 'B' : 'A'}${signature.at(-1)}`;
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    const widened = Buffer.from(JSON.stringify({ ...claims, scope: 'openid email profile offline_access admin' })).toString('base64url');
    for (const token of [`${header}.${payload}.${flipped}`, `${header}.${widened}.${signature}`]) {
      expect((await get({ authorization: `Bearer ${token}` })).statusCode).toBe(401);
    }
    expect((await get(bearer)).statusCode).toBe(200);
    // Revoked (the sign-out of its refresh-token family): refused at once.
    await t.app.inject({ method: 'POST', url: '/oauth/revoke', ...form({ token: refresh_token!, client_id: 'cli' }) });
    expect((await get(bearer)).statusCode).toBe(401);
  });

  it('a token verified before is refused once it expires', async () => {
    const { access_token } = await tokensFor(t, alice, 'cli');
    const bearer = { authorization: `Bearer ${access_token}` };
    expect((await get(bearer)).statusCode).toBe(200);
    t.clock.advance(86400 - 1);
    expect((await get(bearer)).statusCode).toBe(200);
    t.clock.advance(1);
    expect((await get(bearer)).statusCode).toBe(401);
  });

  it('a token without openid → 403 insufficient_scope', async () => {
    const { access_token } = await tokensFor(t, alice, 'cli', { scope: 'email' });
    const res = await get({ authorization: `Bearer ${access_token}` });
    expect(res.statusCode).toBe(403);
    expect(res.headers['www-authenticate']).toContain('error="insufficient_scope"');
  });

  it('a disabled user → 401', async () => {
    const { access_token } = await tokensFor(t, alice, 'cli');
    await t.store.setUserDisabled('alice', true, Math.floor(t.clock()));
    expect((await get({ authorization: `Bearer ${access_token}` })).statusCode).toBe(401);
  });
});
