import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, jwtVerify, decodeProtectedHeader } from 'jose';
import { randomSecret, secretPrefix, sha256 } from '../../src/crypto/secrets.js';
import { deviceGrant } from '../helpers/records.js';
import { normalizeUserCode, userCodeDigest } from '../../src/oauth/user_code.js';
import type { UserRecord } from '../../src/store/store.js';
import { addApi, addClient, addUser, deviceGrantType, form, testApp, type TestApp } from '../helpers/app.js';
import { refreshTokenKey } from '../../src/oauth/refresh_tokens.js';

let t: TestApp;
let alice: UserRecord;

beforeEach(async () => {
  t = await testApp();
  await addClient(t.store, 'tv', { name: 'Living Room TV' });
  await addApi(t.store, 'https://api.example.com');
  alice = await addUser(t.store, 'alice');
});
afterEach(() => t.close());

async function startDeviceFlow(fields: Record<string, string> = {}) {
  const f = form({ client_id: 'tv', scope: 'openid email offline_access', audience: 'https://api.example.com', ...fields });
  const res = await t.app.inject({ method: 'POST', url: '/oauth/device/code', ...f });
  expect(res.statusCode).toBe(200);
  return res.json<{ device_code: string; user_code: string; interval: number; expires_in: number }>();
}

async function grantOf(userCode: string) {
  return (await t.store.findDeviceGrantByUserCode(userCodeDigest(t.app.services.userCodeKey, normalizeUserCode(userCode)!)))!;
}

async function approve(userCode: string, user = alice) {
  const grant = await grantOf(userCode);
  expect(await t.store.approveDeviceGrant(grant.id, user.id, Math.floor(t.clock()), ['pwd'], Math.floor(t.clock()))).toBe(true);
}

function poll(deviceCode: string, fields: Record<string, string> = {}) {
  const f = form({ grant_type: deviceGrantType, device_code: deviceCode, client_id: 'tv', ...fields });
  return t.app.inject({ method: 'POST', url: '/oauth/token', ...f });
}

async function expectError(res: Awaited<ReturnType<typeof poll>>, status: number, error: string) {
  expect(res.statusCode).toBe(status);
  expect(res.headers['cache-control']).toBe('no-store');
  expect(Object.keys(res.json()).sort()).toEqual(['error', 'error_description']);
  expect(res.json().error).toBe(error);
}

describe('POST /oauth/token grant_type=device_code', () => {
  describe('authorization_pending', () => {
    it('while the person has not acted, polls at the interval stay pending', async () => {
      const { device_code } = await startDeviceFlow();
      await expectError(await poll(device_code), 400, 'authorization_pending');
      t.clock.advance(5);
      await expectError(await poll(device_code), 400, 'authorization_pending');
      t.clock.advance(4.2); // 0.8 s early: clock jitter, not impatience
      await expectError(await poll(device_code), 400, 'authorization_pending');
    });
  });

  describe('slow_down', () => {
    it('a poll sooner than the interval gets slow_down and the interval grows by 5 s each time', async () => {
      const { device_code, user_code } = await startDeviceFlow();
      await expectError(await poll(device_code), 400, 'authorization_pending');
      t.clock.advance(2);
      await expectError(await poll(device_code), 400, 'slow_down');
      expect((await grantOf(user_code)).interval).toBe(10);
      t.clock.advance(6); // enough for the old 5 s, not for the new 10 s
      await expectError(await poll(device_code), 400, 'slow_down');
      expect((await grantOf(user_code)).interval).toBe(15);
      t.clock.advance(15);
      await expectError(await poll(device_code), 400, 'authorization_pending');
      expect((await grantOf(user_code)).interval).toBe(15);
    });

    it('where this process alone serves the database, a pending poll writes nothing: its time is kept in memory, and a slow_down is stored', async () => {
      const { device_code, user_code } = await startDeviceFlow();
      await expectError(await poll(device_code), 400, 'authorization_pending');
      t.clock.advance(5);
      await expectError(await poll(device_code), 400, 'authorization_pending');
      expect((await grantOf(user_code)).lastPolledAtMs).toBeUndefined();
      t.clock.advance(1);
      await expectError(await poll(device_code), 400, 'slow_down');
      expect(await grantOf(user_code)).toMatchObject({ interval: 10, lastPolledAtMs: Math.floor(t.clock() * 1000) });
    });

    it("with several processes on the database (LATCHKEY_WORKERS=2) every poll is stored, so each process sees the others' polls", async () => {
      const dir = mkdtempSync(join(tmpdir(), 'latchkey-polls-'));
      const path = join(dir, 'latchkey.db');
      await t.close();
      t = await testApp({ LATCHKEY_WORKERS: '2' }, { path });
      const other = await testApp({ LATCHKEY_WORKERS: '2' }, { path });
      try {
        await addClient(t.store, 'tv', { name: 'Living Room TV' });
        await addApi(t.store, 'https://api.example.com');
        const { device_code, user_code } = await startDeviceFlow();
        await expectError(await poll(device_code), 400, 'authorization_pending');
        expect((await grantOf(user_code)).lastPolledAtMs).toBe(Math.floor(t.clock() * 1000));
        other.clock.set(t.clock() + 2);
        const early = await other.app.inject({ method: 'POST', url: '/oauth/token', ...form({ grant_type: deviceGrantType, device_code, client_id: 'tv' }) });
        await expectError(early, 400, 'slow_down');
      } finally {
        await other.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('an approved grant is handed out even to an impatient poll', async () => {
      const { device_code, user_code } = await startDeviceFlow();
      await expectError(await poll(device_code), 400, 'authorization_pending');
      await approve(user_code);
      t.clock.advance(0.5);
      expect((await poll(device_code)).statusCode).toBe(200);
    });
  });

  describe('tokens', () => {
    it('approved → the token response once, with a verifiable RFC 9068 access token', async () => {
      const { device_code, user_code } = await startDeviceFlow();
      await approve(user_code);
      const res = await poll(device_code);
      expect(res.statusCode).toBe(200);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers.pragma).toBe('no-cache');
      const body = res.json();
      expect(Object.keys(body).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type']);
      expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 86400, scope: 'openid email offline_access' });
      expect(body.refresh_token).toMatch(/^lk_rt_[0-9a-f]{12}[A-Za-z0-9_-]{43}$/);
      expect(body.id_token).toBeUndefined();

      const jwks = (await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json();
      const header = decodeProtectedHeader(body.access_token);
      expect(header).toMatchObject({ alg: 'RS256', typ: 'at+jwt' });
      expect(jwks.keys.map((k: { kid: string }) => k.kid)).toContain(header.kid);
      const now = Math.floor(t.clock());
      const { payload } = await jwtVerify(body.access_token, createLocalJWKSet(jwks), {
        issuer: 'http://latchkey.test',
        audience: 'https://api.example.com',
        typ: 'at+jwt',
        currentDate: new Date(now * 1000),
      });
      expect(payload).toMatchObject({
        iss: 'http://latchkey.test',
        sub: alice.id,
        aud: 'https://api.example.com',
        client_id: 'tv',
        scope: 'openid email offline_access',
        iat: now,
        exp: now + 86400,
      });
      expect(payload.sub).not.toBe('alice');
      expect(payload.jti).toMatch(/^[0-9a-f-]{36}$/);

      // The refresh token is stored only as its digest.
      const stored = await t.store.findRefreshToken(refreshTokenKey(body.refresh_token));
      expect(stored).toMatchObject({ clientId: 'tv', userId: alice.id, scope: 'openid email offline_access' });
      expect(JSON.stringify(t.store.db.prepare('SELECT * FROM refresh_tokens').all())).not.toContain(body.refresh_token);

      await expectError(await poll(device_code), 400, 'invalid_grant');
    });

    it('a new password between reading the person and handing out the tokens: the code is spent, no refresh token is stored, invalid_grant', async () => {
      const { device_code, user_code } = await startDeviceFlow();
      await approve(user_code);
      const before = (await t.store.findUserById(alice.id))!;
      // The redemption reads the person as they were; the password changes before it writes.
      const store = t.app.services.store;
      const findUserById = store.findUserById.bind(store);
      store.findUserById = async (id: string) => {
        await t.store.revokeUserTokens('alice', Math.floor(t.clock()) + 1);
        store.findUserById = findUserById;
        return id === alice.id ? before : findUserById(id);
      };
      await expectError(await poll(device_code), 400, 'invalid_grant');
      expect((await grantOf(user_code)).status).toBe('consumed');
      expect(t.store.db.prepare('SELECT count(*) AS n FROM refresh_tokens').get()).toEqual({ n: 0 });
      await expectError(await poll(device_code), 400, 'invalid_grant');
    });

    it('roles that no longer allow anything asked for: invalid_scope, and the code is spent', async () => {
      await t.store.updateApi({ ...(await t.store.findApi('https://api.example.com'))!, scopes: ['read'] });
      await t.store.createRole({
        name: 'reader',
        description: undefined,
        permissions: [{ api: 'https://api.example.com', scope: 'read' }],
        createdAt: Math.floor(t.clock()),
      });
      await t.store.grantRole(alice.id, 'reader', Math.floor(t.clock()));
      const { device_code, user_code } = await startDeviceFlow({ scope: 'read' });
      await approve(user_code);
      await t.store.revokeRole(alice.id, 'reader');
      await expectError(await poll(device_code), 400, 'invalid_scope');
      expect((await grantOf(user_code)).status).toBe('consumed');
      await expectError(await poll(device_code), 400, 'invalid_grant');
    });

    it('no refresh token without offline_access; the access token lifetime follows LATCHKEY_ACCESS_TOKEN_TTL', async () => {
      await t.close();
      t = await testApp({ LATCHKEY_ACCESS_TOKEN_TTL: '600' });
      await addClient(t.store, 'tv');
      alice = await addUser(t.store, 'alice');
      const { device_code, user_code } = await startDeviceFlow({ scope: 'openid', audience: '' });
      await approve(user_code);
      const body = (await poll(device_code)).json();
      expect(body.refresh_token).toBeUndefined();
      expect(body).toMatchObject({ expires_in: 600, scope: 'openid' });
      const claims = JSON.parse(Buffer.from(body.access_token.split('.')[1], 'base64url').toString());
      expect(claims.aud).toBe('http://latchkey.test/userinfo');
      expect(claims.exp - claims.iat).toBe(600);
    });
  });

  describe('access_denied', () => {
    it('denied → access_denied on every later poll', async () => {
      const { device_code, user_code } = await startDeviceFlow();
      expect(await t.store.denyDeviceGrant((await grantOf(user_code)).id, Math.floor(t.clock()))).toBe(true);
      await expectError(await poll(device_code), 400, 'access_denied');
      t.clock.advance(5);
      await expectError(await poll(device_code), 400, 'access_denied');
    });
  });

  describe('expired_token', () => {
    it('past expires_in → expired_token, pending or approved', async () => {
      const pending = await startDeviceFlow();
      const approved = await startDeviceFlow();
      await approve(approved.user_code);
      t.clock.advance(900);
      await expectError(await poll(pending.device_code), 400, 'expired_token');
      await expectError(await poll(approved.device_code), 400, 'expired_token');
    });
  });

  describe('device codes made before their keys carried the time', () => {
    it('a device code stored under its plain SHA-256 is still polled, approved and redeemed', async () => {
      // As a server of an earlier version made them: prefix and 32 random bytes, key sha256(code).
      const earlier = randomSecret(secretPrefix.deviceCode);
      const now = Math.floor(t.clock());
      await t.store.createDeviceGrant(
        deviceGrant({ id: 'earlier', deviceCodeHash: sha256(earlier), clientId: 'tv', createdAt: now, expiresAt: now + 900, scope: 'openid offline_access' }),
      );
      await expectError(await poll(earlier), 400, 'authorization_pending');
      expect(await t.store.approveDeviceGrant('earlier', alice.id, now, ['pwd'], now)).toBe(true);
      t.clock.advance(5);
      const res = await poll(earlier);
      expect(res.statusCode).toBe(200);
      expect(res.json().refresh_token).toMatch(/^lk_rt_/);
      await expectError(await poll(earlier), 400, 'invalid_grant');
    });

    it('a new-style code whose digits or length were altered is an unknown code, never another grant', async () => {
      const { device_code, user_code } = await startDeviceFlow();
      await approve(user_code);
      const digits = device_code.slice(6, 18);
      const otherDigits = (parseInt(digits, 16) + 1).toString(16).padStart(12, '0');
      for (const altered of [
        `lk_dc_${otherDigits}${device_code.slice(18)}`,
        device_code.slice(0, -1),
        `${device_code}A`,
        device_code.replace(digits, digits.toUpperCase()),
      ]) {
        if (altered === device_code) continue;
        await expectError(await poll(altered), 400, 'invalid_grant');
      }
      t.clock.advance(5);
      expect((await poll(device_code)).statusCode).toBe(200);
    });
  });

  describe('invalid_grant', () => {
    it('an unknown device code', async () => {
      await expectError(await poll('lk_dc_unknown'), 400, 'invalid_grant');
    });

    it('a device code of another client', async () => {
      await addClient(t.store, 'other');
      const { device_code, user_code } = await startDeviceFlow();
      await approve(user_code);
      await expectError(await poll(device_code, { client_id: 'other' }), 400, 'invalid_grant');
      // The rightful client still gets its tokens.
      expect((await poll(device_code)).statusCode).toBe(200);
    });

    it('the approving user disabled meanwhile', async () => {
      const { device_code, user_code } = await startDeviceFlow();
      await approve(user_code);
      await t.store.setUserDisabled('alice', true, Math.floor(t.clock()));
      await expectError(await poll(device_code), 400, 'invalid_grant');
    });

    it('a missing device_code → invalid_request', async () => {
      const f = form({ grant_type: deviceGrantType, client_id: 'tv' });
      await expectError(await t.app.inject({ method: 'POST', url: '/oauth/token', ...f }), 400, 'invalid_request');
    });
  });

  describe('the token endpoint itself', () => {
    it('an unknown grant_type → unsupported_grant_type', async () => {
      const f = form({ grant_type: 'password', client_id: 'tv', username: 'a', password: 'b' });
      await expectError(await t.app.inject({ method: 'POST', url: '/oauth/token', ...f }), 400, 'unsupported_grant_type');
    });

    it('a missing grant_type → invalid_request', async () => {
      const f = form({ client_id: 'tv' });
      await expectError(await t.app.inject({ method: 'POST', url: '/oauth/token', ...f }), 400, 'invalid_request');
    });

    it('a client without the device_code grant → unauthorized_client', async () => {
      await addClient(t.store, 'web', { grantTypes: ['authorization_code'] });
      await expectError(await poll('lk_dc_x', { client_id: 'web' }), 400, 'unauthorized_client');
    });

    it('an unknown client → 401 invalid_client', async () => {
      const res = await poll('lk_dc_x', { client_id: 'ghost' });
      await expectError(res, 401, 'invalid_client');
      expect(res.headers['www-authenticate']).toMatch(/^Basic /);
    });
  });

  describe('rate limit on unknown device codes (RFC 8628 §5.2)', () => {
    it('past the limit an address gets 429 with Retry-After for unknown codes, while known codes keep working', async () => {
      const { device_code, user_code } = await startDeviceFlow();
      for (let i = 0; i < 30; i++) await expectError(await poll(`lk_dc_guess${i}`), 400, 'invalid_grant');
      const limited = await poll('lk_dc_guess-more');
      await expectError(limited, 429, 'temporarily_unavailable');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      // A device polling its own code from the same address (same NAT, same proxy) is never held up.
      await expectError(await poll(device_code), 400, 'authorization_pending');
      await approve(user_code);
      expect((await poll(device_code)).statusCode).toBe(200);
      t.clock.advance(301);
      await expectError(await poll('lk_dc_guess-after-window'), 400, 'invalid_grant');
    });

    it('a poll by another client does not touch the grant (no slow_down for the rightful device)', async () => {
      await addClient(t.store, 'other');
      const { device_code } = await startDeviceFlow();
      await expectError(await poll(device_code), 400, 'authorization_pending');
      t.clock.advance(5);
      await expectError(await poll(device_code, { client_id: 'other' }), 400, 'invalid_grant');
      await expectError(await poll(device_code), 400, 'authorization_pending');
    });

    it('legitimate polling at the interval is never limited', async () => {
      const { device_code } = await startDeviceFlow();
      for (let i = 0; i < 100; i++) {
        await expectError(await poll(device_code), 400, 'authorization_pending');
        t.clock.advance(5);
      }
    });
  });
});
