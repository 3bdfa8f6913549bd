import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { sha256 } from '../../src/crypto/secrets.js';
import type { UserRecord } from '../../src/store/store.js';
import { addApi, addClient, addUser, testApp, type TestApp } from '../helpers/app.js';
import { refresh, tokensFor } from '../helpers/flows.js';

let t: TestApp;
let alice: UserRecord;

async function setUp(env: Record<string, string> = {}) {
  t = await testApp(env);
  alice = await addUser(t.store, 'alice');
  await addApi(t.store, 'https://api.example.com');
  await addClient(t.store, 'cli');
  await addClient(t.store, 'other');
  await addClient(t.store, 'no-refresh', { grantTypes: ['device_code'] });
}
beforeEach(() => setUp());
afterEach(() => t.close());

async function expectError(res: Awaited<ReturnType<typeof refresh>>, error: string, status = 400) {
  expect(res.statusCode).toBe(status);
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.json().error).toBe(error);
}

describe('POST /oauth/token grant_type=refresh_token', () => {
  it('rotates: a new access token and a new refresh token; the old one is spent', async () => {
    const first = await tokensFor(t, alice, 'cli', { audience: 'https://api.example.com' });
    t.clock.advance(60);
    const res = await refresh(t, 'cli', first.refresh_token!);
    expect(res.statusCode).toBe(200);
    const next = res.json();
    expect(Object.keys(next).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type']);
    expect(next.refresh_token).toMatch(/^lk_rt_/);
    expect(next.refresh_token).not.toBe(first.refresh_token);
    expect(next.scope).toBe('openid email profile offline_access');
    const claims = decodeJwt(next.access_token);
    expect(claims).toMatchObject({ sub: alice.id, aud: 'https://api.example.com', client_id: 'cli', iat: Math.floor(t.clock()) });
    const old = await t.store.findRefreshToken(sha256(first.refresh_token!));
    const successor = await t.store.findRefreshToken(sha256(next.refresh_token));
    expect(old?.rotatedAt).toBe(Math.floor(t.clock()));
    expect(successor?.familyId).toBe(old?.familyId);
  });

  it('a narrower scope is granted to the access token; the refresh token keeps the original scope', async () => {
    const first = await tokensFor(t, alice, 'cli');
    const res = await refresh(t, 'cli', first.refresh_token!, { scope: 'openid email' });
    expect(res.statusCode).toBe(200);
    expect(res.json().scope).toBe('openid email');
    expect(decodeJwt(res.json().access_token).scope).toBe('openid email');
    expect((await t.store.findRefreshToken(sha256(res.json().refresh_token)))?.scope).toBe('openid email profile offline_access');
  });

  it('a wider scope → invalid_scope, and the token is not spent', async () => {
    const first = await tokensFor(t, alice, 'cli', { scope: 'openid offline_access' });
    await expectError(await refresh(t, 'cli', first.refresh_token!, { scope: 'openid email' }), 'invalid_scope');
    expect((await refresh(t, 'cli', first.refresh_token!)).statusCode).toBe(200);
  });

  it('is bound to its client: another client → invalid_grant, nothing revoked', async () => {
    const first = await tokensFor(t, alice, 'cli');
    await expectError(await refresh(t, 'other', first.refresh_token!), 'invalid_grant');
    expect((await refresh(t, 'cli', first.refresh_token!)).statusCode).toBe(200);
  });

  it('a client without the refresh_token grant → unauthorized_client', async () => {
    const first = await tokensFor(t, alice, 'cli');
    await expectError(await refresh(t, 'no-refresh', first.refresh_token!), 'unauthorized_client');
  });

  it('an unknown token → invalid_grant; a missing one → invalid_request', async () => {
    await expectError(await refresh(t, 'cli', 'lk_rt_unknown'), 'invalid_grant');
    await expectError(await refresh(t, 'cli', ''), 'invalid_request');
  });

  it('a disabled user → invalid_grant', async () => {
    const first = await tokensFor(t, alice, 'cli');
    await t.store.setUserDisabled('alice', true);
    await expectError(await refresh(t, 'cli', first.refresh_token!), 'invalid_grant');
  });

  describe('lifetimes', () => {
    it('an idle token expires after the idle timeout (14 days by default)', async () => {
      const first = await tokensFor(t, alice, 'cli');
      t.clock.advance(14 * 86400);
      await expectError(await refresh(t, 'cli', first.refresh_token!), 'invalid_grant');
    });

    it('rotation renews the idle period but never the absolute lifetime (30 days by default)', async () => {
      let current = (await tokensFor(t, alice, 'cli')).refresh_token!;
      for (let day = 0; day < 29; day += 7) {
        t.clock.advance(7 * 86400);
        const res = await refresh(t, 'cli', current);
        if (day + 7 >= 30) {
          await expectError(res, 'invalid_grant');
          return;
        }
        expect(res.statusCode).toBe(200);
        current = res.json().refresh_token;
      }
      t.clock.advance(2 * 86400); // 30 days after the sign-in
      await expectError(await refresh(t, 'cli', current), 'invalid_grant');
    });

    it('LATCHKEY_REFRESH_TOKEN_TTL and LATCHKEY_REFRESH_TOKEN_IDLE_TTL are honoured', async () => {
      await t.close();
      await setUp({ LATCHKEY_REFRESH_TOKEN_TTL: '600', LATCHKEY_REFRESH_TOKEN_IDLE_TTL: '300' });
      const first = await tokensFor(t, alice, 'cli');
      t.clock.advance(299);
      const second = await refresh(t, 'cli', first.refresh_token!);
      expect(second.statusCode).toBe(200);
      t.clock.advance(299);
      const third = await refresh(t, 'cli', second.json().refresh_token);
      expect(third.statusCode).toBe(200);
      t.clock.advance(10); // 608 s after sign-in: past the family's absolute end
      await expectError(await refresh(t, 'cli', third.json().refresh_token), 'invalid_grant');
    });
  });

  describe('reuse of a rotated token (RFC 9700 §4.14)', () => {
    it('outside the grace window is theft: the whole family is revoked, the newest token too', async () => {
      const first = await tokensFor(t, alice, 'cli');
      const second = (await refresh(t, 'cli', first.refresh_token!)).json();
      t.clock.advance(6);
      await expectError(await refresh(t, 'cli', first.refresh_token!), 'invalid_grant');
      await expectError(await refresh(t, 'cli', second.refresh_token), 'invalid_grant');
    });

    it('within the grace window by the same client gets a fresh pair, and nothing is revoked', async () => {
      const first = await tokensFor(t, alice, 'cli');
      const a = (await refresh(t, 'cli', first.refresh_token!)).json();
      t.clock.advance(4);
      const bRes = await refresh(t, 'cli', first.refresh_token!);
      expect(bRes.statusCode).toBe(200);
      const b = bRes.json();
      expect(b.refresh_token).not.toBe(a.refresh_token);
      expect((await refresh(t, 'cli', a.refresh_token)).statusCode).toBe(200);
      expect((await refresh(t, 'cli', b.refresh_token)).statusCode).toBe(200);
    });

    it('within the grace window by another client is still refused', async () => {
      const first = await tokensFor(t, alice, 'cli');
      await refresh(t, 'cli', first.refresh_token!);
      await expectError(await refresh(t, 'other', first.refresh_token!), 'invalid_grant');
    });

    it('LATCHKEY_REFRESH_REUSE_GRACE=0 turns the grace off', async () => {
      await t.close();
      await setUp({ LATCHKEY_REFRESH_REUSE_GRACE: '0' });
      const first = await tokensFor(t, alice, 'cli');
      const second = (await refresh(t, 'cli', first.refresh_token!)).json();
      await expectError(await refresh(t, 'cli', first.refresh_token!), 'invalid_grant');
      await expectError(await refresh(t, 'cli', second.refresh_token), 'invalid_grant');
    });

    it('three concurrent refreshes of one token (three racing processes): each gets its own pair', async () => {
      const first = await tokensFor(t, alice, 'cli');
      const results = await Promise.all(Array.from({ length: 3 }, () => refresh(t, 'cli', first.refresh_token!)));
      expect(results.map((r) => r.statusCode)).toEqual([200, 200, 200]);
      expect(new Set(results.map((r) => r.json().refresh_token)).size).toBe(3);
      for (const r of results) expect((await refresh(t, 'cli', r.json().refresh_token)).statusCode).toBe(200);
    });

    it('the grace cannot fork the family without limit: a fourth reuse in the window revokes it', async () => {
      const first = await tokensFor(t, alice, 'cli');
      const pairs = [];
      for (let i = 0; i < 3; i++) pairs.push((await refresh(t, 'cli', first.refresh_token!)).json());
      await expectError(await refresh(t, 'cli', first.refresh_token!), 'invalid_grant');
      for (const pair of pairs) await expectError(await refresh(t, 'cli', pair.refresh_token), 'invalid_grant');
    });

    it('no grace once the first successor has been used: that reuse is a second branch', async () => {
      const first = await tokensFor(t, alice, 'cli');
      const second = (await refresh(t, 'cli', first.refresh_token!)).json();
      const third = (await refresh(t, 'cli', second.refresh_token)).json();
      await expectError(await refresh(t, 'cli', first.refresh_token!), 'invalid_grant'); // within 5 s, but the branch moved on
      await expectError(await refresh(t, 'cli', third.refresh_token), 'invalid_grant');
    });

    it('a rotated token replayed after its own idle expiry is still theft (the thief kept the family alive)', async () => {
      const first = await tokensFor(t, alice, 'cli');
      let current = (await refresh(t, 'cli', first.refresh_token!)).json().refresh_token as string;
      for (let day = 0; day < 3; day++) {
        t.clock.advance(5 * 86400);
        current = (await refresh(t, 'cli', current)).json().refresh_token;
      }
      await t.store.purgeExpired(Math.floor(t.clock()));
      await expectError(await refresh(t, 'cli', first.refresh_token!), 'invalid_grant');
      await expectError(await refresh(t, 'cli', current), 'invalid_grant');
    });

    it('revoking the family also refuses the access tokens it issued', async () => {
      const first = await tokensFor(t, alice, 'cli');
      const second = (await refresh(t, 'cli', first.refresh_token!)).json();
      t.clock.advance(6);
      await refresh(t, 'cli', first.refresh_token!); // theft detected
      for (const token of [first.access_token, second.access_token]) {
        const res = await t.app.inject({ method: 'GET', url: '/userinfo', headers: { authorization: `Bearer ${token}` } });
        expect(res.statusCode).toBe(401);
      }
    });

    it('concurrent refreshes with the grace off: exactly one succeeds; the losers are reuse outside the grace, so the family is revoked', async () => {
      await t.close();
      await setUp({ LATCHKEY_REFRESH_REUSE_GRACE: '0' });
      const first = await tokensFor(t, alice, 'cli');
      const results = await Promise.all(Array.from({ length: 5 }, () => refresh(t, 'cli', first.refresh_token!)));
      const winners = results.filter((r) => r.statusCode === 200);
      expect(winners).toHaveLength(1);
      await expectError(await refresh(t, 'cli', winners[0]!.json().refresh_token), 'invalid_grant');
    });
  });
});
