/**
 * Who may call the management API (/api/v1): an access token for the built-in API
 * `{issuer}/api/v1` carrying the call's scope, verified as /userinfo verifies tokens; refusals as
 * RFC 6750 §3 says (401 invalid_token, 403 insufficient_scope, WWW-Authenticate), as problem
 * details (RFC 9457); calls counted per caller.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { calculateJwkThumbprint, decodeJwt, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { addClient, addUser, deviceGrantType, form, testApp, type TestApp } from '../helpers/app.js';
import { tokensFor } from '../helpers/flows.js';
import { normalizeUserCode, userCodeDigest } from '../../src/oauth/user_code.js';
import { managementScopes } from '../../src/management/management_api.js';
import type { UserRecord } from '../../src/store/store.js';

const issuer = 'http://latchkey.test';
const managementApi = `${issuer}/api/v1`;
const everyScope = `openid offline_access ${managementScopes.join(' ')}`;
let t: TestApp;
let alice: UserRecord;
let bob: UserRecord;

function listUsers(authorization?: string, extra: Record<string, string> = {}) {
  return t.app.inject({ method: 'GET', url: '/api/v1/users', headers: { ...(authorization === undefined ? {} : { authorization }), ...extra } });
}

async function adminToken(user = alice): Promise<string> {
  return (await tokensFor(t, user, 'cli', { scope: everyScope, audience: managementApi })).access_token;
}

beforeEach(async () => {
  t = await testApp();
  alice = await addUser(t.store, 'alice', 'correct horse battery', { roles: ['admin'] });
  alice = (await t.store.findUserById(alice.id))!;
  bob = await addUser(t.store, 'bob');
  await addClient(t.store, 'cli', { grantTypes: ['device_code', 'refresh_token'] });
});

afterEach(async () => {
  await t.close();
});

describe('the built-in API', () => {
  it('is made at start as {issuer}/api/v1 with read and write scopes of every resource, all held by the admin role', async () => {
    const api = await t.store.findApi(managementApi);
    expect(api?.scopes).toEqual([...managementScopes]);
    expect(managementScopes).toHaveLength(16);
    expect(managementScopes).toContain('write:audit-events');
    expect(await t.store.permittedScopes(alice.id, managementApi)).toEqual([...managementScopes].sort());
  });

  it('a person with the admin role signing in for it gets every management scope', async () => {
    const claims = decodeJwt(await adminToken());
    expect(claims.aud).toBe(managementApi);
    expect(String(claims.scope).split(' ')).toEqual(expect.arrayContaining([...managementScopes]));
  });
});

describe('authorizeManagementCall', () => {
  it('a Bearer token with the scope: the call is answered', async () => {
    const res = await listUsers(`Bearer ${await adminToken()}`);
    expect(res.statusCode).toBe(200);
    expect(res.json().data.map((u: { username: string }) => u.username)).toEqual(['admin', 'alice', 'bob']);
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('no token: 401 with a bare challenge offering Bearer and DPoP (RFC 6750 §3.1)', async () => {
    const res = await listUsers();
    expect(res.statusCode).toBe(401);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="latchkey", DPoP algs="/);
    expect(res.headers['www-authenticate']).not.toContain('error=');
  });

  it('a token without the scope: 403 insufficient_scope, WWW-Authenticate naming the scope, problem details', async () => {
    const token = (await tokensFor(t, bob, 'cli', { scope: everyScope, audience: managementApi })).access_token;
    expect(decodeJwt(token).scope).toBe('openid offline_access');
    const res = await listUsers(`Bearer ${token}`);
    expect(res.statusCode).toBe(403);
    expect(res.headers['www-authenticate']).toContain('error="insufficient_scope"');
    expect(res.headers['www-authenticate']).toContain('scope="read:users"');
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.json()).toMatchObject({ status: 403, title: 'Forbidden', detail: 'This call needs the read:users scope.' });
    expect(res.json().type).toMatch(/insufficient-scope$/);
  });

  it('a role taken away ends management access at once, before the token expires', async () => {
    const token = await adminToken();
    expect((await listUsers(`Bearer ${token}`)).statusCode).toBe(200);
    await t.store.revokeRole(alice.id, 'admin');
    const res = await listUsers(`Bearer ${token}`);
    expect(res.statusCode).toBe(403);
    expect(res.headers['www-authenticate']).toContain('error="insufficient_scope"');
  });

  it('an expired token: 401 invalid_token', async () => {
    const token = await adminToken();
    t.clock.advance(t.config.accessTokenTtl + 1);
    const res = await listUsers(`Bearer ${token}`);
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('a forged token (signed by a key of its own, claims copied): 401 invalid_token', async () => {
    const claims = decodeJwt(await adminToken());
    const { privateKey } = await generateKeyPair('ES256');
    const forged = await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'forged' }).sign(privateKey);
    const res = await listUsers(`Bearer ${forged}`);
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('a token for another audience (the userinfo default) of the same admin: 401 invalid_token', async () => {
    const token = (await tokensFor(t, alice, 'cli', { scope: 'openid offline_access' })).access_token;
    const res = await listUsers(`Bearer ${token}`);
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
    expect(res.json().detail).toBe('The access token was not issued for the management API.');
  });

  it('a revoked sign-in (users revoke-tokens) ends the token: 401 invalid_token', async () => {
    const token = await adminToken();
    t.clock.advance(1);
    await t.store.revokeUserTokens('alice', Math.floor(t.clock()));
    const res = await listUsers(`Bearer ${token}`);
    expect(res.statusCode).toBe(401);
  });

  it('a machine client granted read:users through client_credentials is answered; one granted only write:clients is not', async () => {
    const { secret } = await addClient(t.store, 'provisioner', { confidential: true, grantTypes: ['client_credentials'], secretBox: t.app.services.secretBox });
    await t.store.saveClientGrant({ clientId: 'provisioner', api: managementApi, scopes: ['read:users', 'write:clients'], createdAt: 1_800_000_000 });
    const machineToken = async (scope: string) => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/oauth/token',
        ...form({ grant_type: 'client_credentials', client_id: 'provisioner', client_secret: secret!, audience: managementApi, scope }),
      });
      expect(res.statusCode).toBe(200);
      return res.json().access_token as string;
    };
    expect((await listUsers(`Bearer ${await machineToken('read:users')}`)).statusCode).toBe(200);
    const narrow = await listUsers(`Bearer ${await machineToken('write:clients')}`);
    expect(narrow.statusCode).toBe(403);
    expect(narrow.headers['www-authenticate']).toContain('scope="read:users"');
  });
});

describe('DPoP-bound tokens (RFC 9449 §7)', () => {
  let key: { privateKey: CryptoKey; jwk: JWK; jkt: string };

  async function proof(options: { htm?: string; htu?: string; nonce?: string; accessToken?: string } = {}): Promise<string> {
    return new SignJWT({
      htm: options.htm ?? 'POST',
      htu: options.htu ?? `${issuer}/oauth/token`,
      jti: `jti-${Math.random()}`,
      iat: Math.floor(t.clock()),
      ...(options.nonce === undefined ? {} : { nonce: options.nonce }),
      ...(options.accessToken === undefined ? {} : { ath: createHash('sha256').update(options.accessToken).digest('base64url') }),
    })
      .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk })
      .sign(key.privateKey);
  }

  async function boundToken(): Promise<string> {
    const device = (
      await t.app.inject({ method: 'POST', url: '/oauth/device/code', ...form({ client_id: 'cli', scope: everyScope, audience: managementApi }) })
    ).json();
    const grant = await t.store.findDeviceGrantByUserCode(userCodeDigest(t.app.services.userCodeKey, normalizeUserCode(device.user_code)!));
    await t.store.approveDeviceGrant(grant!.id, alice.id, Math.floor(t.clock()), ['pwd'], Math.floor(t.clock()));
    const fields = form({ grant_type: deviceGrantType, device_code: device.device_code, client_id: 'cli' });
    const ask = (dpop: string) => t.app.inject({ method: 'POST', url: '/oauth/token', payload: fields.payload, headers: { ...fields.headers, dpop } });
    const first = await ask(await proof());
    const res = await ask(await proof({ nonce: first.headers['dpop-nonce'] as string }));
    expect(res.json().token_type).toBe('DPoP');
    return res.json().access_token;
  }

  beforeEach(async () => {
    const pair = await generateKeyPair('ES256', { extractable: true });
    const jwk = await exportJWK(pair.publicKey);
    key = { privateKey: pair.privateKey, jwk, jkt: await calculateJwkThumbprint(jwk) };
  });

  it('with a proof for this request by its key: answered', async () => {
    const token = await boundToken();
    const res = await listUsers(`DPoP ${token}`, { dpop: await proof({ htm: 'GET', htu: `${managementApi}/users`, accessToken: token }) });
    expect(res.statusCode).toBe(200);
  });

  it('sent as Bearer (a stolen copy), without a proof, or with a proof for another URL: 401', async () => {
    const token = await boundToken();
    const asBearer = await listUsers(`Bearer ${token}`);
    expect(asBearer.statusCode).toBe(401);
    expect(asBearer.headers['www-authenticate']).toMatch(/^DPoP /);
    expect((await listUsers(`DPoP ${token}`)).statusCode).toBe(401);
    const elsewhere = await listUsers(`DPoP ${token}`, { dpop: await proof({ htm: 'GET', htu: `${issuer}/userinfo`, accessToken: token }) });
    expect(elsewhere.statusCode).toBe(401);
    expect(elsewhere.headers['www-authenticate']).toContain('error="invalid_dpop_proof"');
  });
});

describe('rate limits per caller', () => {
  it('past LATCHKEY_RATE_LIMIT_MANAGEMENT a caller gets a 429 problem with Retry-After; another caller is not held back', async () => {
    await t.close();
    t = await testApp({ LATCHKEY_RATE_LIMIT_MANAGEMENT: '2/60' });
    alice = await addUser(t.store, 'alice', 'correct horse battery', { roles: ['admin'] });
    alice = (await t.store.findUserById(alice.id))!;
    await addClient(t.store, 'cli', { grantTypes: ['device_code', 'refresh_token'] });
    const admin = (await t.store.findUserByUsername('admin'))!;
    const token = await adminToken();
    expect((await listUsers(`Bearer ${token}`)).statusCode).toBe(200);
    expect((await listUsers(`Bearer ${token}`)).statusCode).toBe(200);
    const limited = await listUsers(`Bearer ${token}`);
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['content-type']).toContain('application/problem+json');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.json()).toMatchObject({ status: 429, title: 'Too many requests' });
    // A second token of the same person counts against the same budget.
    expect((await listUsers(`Bearer ${await adminToken()}`)).statusCode).toBe(429);
    expect((await listUsers(`Bearer ${await adminToken(admin)}`)).statusCode).toBe(200);
    t.clock.advance(61);
    expect((await listUsers(`Bearer ${token}`)).statusCode).toBe(200);
  });
});

describe('GET /api/v1/users', () => {
  it('pages with a cursor: { data, next }, next null on the last page; a made-up cursor is a 400 problem', async () => {
    const token = await adminToken();
    const first = (await t.app.inject({ method: 'GET', url: '/api/v1/users?limit=2', headers: { authorization: `Bearer ${token}` } })).json();
    expect(first.data.map((u: { username: string }) => u.username)).toEqual(['admin', 'alice']);
    expect(first.data[1]).toMatchObject({ username: 'alice', email: alice.email, disabled: false, roles: ['admin'], identities: [] });
    expect(first.data[1].created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const second = (
      await t.app.inject({ method: 'GET', url: `/api/v1/users?limit=2&cursor=${first.next}`, headers: { authorization: `Bearer ${token}` } })
    ).json();
    expect(second).toEqual({ data: [expect.objectContaining({ username: 'bob' })], next: null });
    const bad = await t.app.inject({ method: 'GET', url: '/api/v1/users?cursor=%%%', headers: { authorization: `Bearer ${token}` } });
    expect(bad.statusCode).toBe(400);
    expect(bad.headers['content-type']).toContain('application/problem+json');
  });
});
