import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import type { UserRecord } from '../../src/store/store.js';
import { addApi, addClient, addUser, testApp, type TestApp } from '../helpers/app.js';
import { refresh, tokensFor } from '../helpers/flows.js';
import { refreshTokenKey } from '../../src/oauth/refresh_tokens.js';
import { randomSecret, secretPrefix, sha256 } from '../../src/crypto/secrets.js';
import { refreshToken } from '../helpers/records.js';

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
  it('a refresh token made before its key carried the time (stored under its plain SHA-256) still rotates and revokes', async () => {
    // As a server of an earlier version made them: prefix and 32 random bytes, key sha256(token).
    const now = Math.floor(t.clock());
    const earlier = async (id: string) => {
      const token = randomSecret(secretPrefix.refreshToken);
      await t.store.createRefreshToken(
        refreshToken({
          id,
          tokenHash: sha256(token),
          familyId: `family-${id}`,
          userId: alice.id,
          clientId: 'cli',
          createdAt: now,
          authTime: now,
          expiresAt: now + 3600,
          familyExpiresAt: now + 7200,
        }),
      );
      return token;
    };
    const rotated = await earlier('rotated');
    const res = await refresh(t, 'cli', rotated);
    expect(res.statusCode).toBe(200);
    const successor = res.json().refresh_token as string;
    expect(successor).toMatch(/^lk_rt_[0-9a-f]{12}[A-Za-z0-9_-]{43}$/);
    expect((await t.store.findRefreshToken(refreshTokenKey(successor)))?.familyId).toBe('family-rotated');
    expect((await t.store.findRefreshToken(sha256(rotated)))?.rotatedAt).toBe(now);

    // Revocation finds it by the same key (oauth/token_lookup.ts).
    const revokedToken = await earlier('revoked');
    const revoked = await t.app.inject({
      method: 'POST',
      url: '/oauth/revoke',
      payload: new URLSearchParams({ token: revokedToken, token_type_hint: 'refresh_token', client_id: 'cli' }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(revoked.statusCode).toBe(200);
    expect((await t.store.findRefreshToken(sha256(revokedToken)))?.revokedAt).toBe(now);
  });

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
    const old = await t.store.findRefreshToken(refreshTokenKey(first.refresh_token!));
    const successor = await t.store.findRefreshToken(refreshTokenKey(next.refresh_token));
    expect(old?.rotatedAt).toBe(Math.floor(t.clock()));
    expect(successor?.familyId).toBe(old?.familyId);
  });

  it('a narrower scope is granted to the access token; the refresh token keeps the original scope', async () => {
    const first = await tokensFor(t, alice, 'cli');
    const res = await refresh(t, 'cli', first.refresh_token!, { scope: 'openid email' });
    expect(res.statusCode).toBe(200);
    expect(res.json().scope).toBe('openid email');
    expect(decodeJwt(res.json().access_token).scope).toBe('openid email');
    expect((await t.store.findRefreshToken(refreshTokenKey(res.json().refresh_token)))?.scope).toBe('openid email profile offline_access');
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
    await t.store.setUserDisabled('alice', true, Math.floor(t.clock()));
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
    it('outside the grace window, once the successor has been used, reuse is theft: the whole family is revoked, the newest token too', async () => {
      const first = await tokensFor(t, alice, 'cli');
      const second = (await refresh(t, 'cli', first.refresh_token!)).json();
      t.clock.advance(6);
      const third = (await refresh(t, 'cli', second.refresh_token)).json();
      await expectError(await refresh(t, 'cli', first.refresh_token!), 'invalid_grant');
      await expectError(await refresh(t, 'cli', third.refresh_token), 'invalid_grant');
    });

    it('past LATCHKEY_RETRY_WINDOW (10 s), reuse is theft even while the successor is unused', async () => {
      const first = await tokensFor(t, alice, 'cli');
      const second = (await refresh(t, 'cli', first.refresh_token!)).json();
      t.clock.advance(11);
      await expectError(await refresh(t, 'cli', first.refresh_token!), 'invalid_grant');
      await expectError(await refresh(t, 'cli', second.refresh_token), 'invalid_grant');
    });

    it('within the grace window by the same client gets a pair of its own, and nothing is revoked: both answers go on', async () => {
      const first = await tokensFor(t, alice, 'cli');
      const a = (await refresh(t, 'cli', first.refresh_token!)).json();
      t.clock.advance(4);
      const bRes = await refresh(t, 'cli', first.refresh_token!);
      expect(bRes.statusCode).toBe(200);
      const b = bRes.json();
      expect(b.refresh_token).not.toBe(a.refresh_token);
      // Each racing process goes on with the answer it got.
      expect((await refresh(t, 'cli', b.refresh_token)).statusCode).toBe(200);
      t.clock.advance(60);
      expect((await refresh(t, 'cli', a.refresh_token)).statusCode).toBe(200);
    });

    // Two holders of one token within the grace window look alike, a racing process or a thief a
    // few seconds late: each gets a branch (as Hydra's rotation_grace_period does). What stays is
    // theft detection on every rotated token: one presented again after the window revokes the
    // family with all its branches (RFC 9700 §4.14.2).
    it('a second holder inside the grace window gets a branch of its own; a rotated token replayed later revokes every branch', async () => {
      const rt0 = (await tokensFor(t, alice, 'cli')).refresh_token!;
      const l1 = (await refresh(t, 'cli', rt0)).json(); // one process rotates
      t.clock.advance(2);
      const t1 = (await refresh(t, 'cli', rt0)).json(); // another presents RT0 in the grace window
      expect(t1.refresh_token).toMatch(/^lk_rt_/);
      const l2 = (await refresh(t, 'cli', l1.refresh_token)).json(); // each goes on
      const t2 = (await refresh(t, 'cli', t1.refresh_token)).json();
      expect(l2.refresh_token).toMatch(/^lk_rt_/);
      expect(t2.refresh_token).toMatch(/^lk_rt_/);
      t.clock.advance(60); // long past the window
      await expectError(await refresh(t, 'cli', l1.refresh_token), 'invalid_grant'); // a rotated token again: theft…
      await expectError(await refresh(t, 'cli', l2.refresh_token), 'invalid_grant'); // …and every branch revoked
      await expectError(await refresh(t, 'cli', t2.refresh_token), 'invalid_grant');
      for (const token of [l2.access_token, t2.access_token]) {
        const userinfo = await t.app.inject({ method: 'GET', url: '/userinfo', headers: { authorization: `Bearer ${token}` } });
        expect(userinfo.statusCode).toBe(401);
      }
    });

    it('whichever answer of a race is used first, the others still refresh later', async () => {
      const rt0 = (await tokensFor(t, alice, 'cli')).refresh_token!;
      const l1 = (await refresh(t, 'cli', rt0)).json();
      const t1 = (await refresh(t, 'cli', rt0)).json();
      const t2 = (await refresh(t, 'cli', t1.refresh_token)).json(); // the grace successor goes on first
      expect(t2.refresh_token).toMatch(/^lk_rt_/);
      t.clock.advance(60);
      const l2 = await refresh(t, 'cli', l1.refresh_token);
      expect(l2.statusCode).toBe(200);
      expect((await refresh(t, 'cli', t2.refresh_token)).statusCode).toBe(200);
      expect((await refresh(t, 'cli', l2.json().refresh_token)).statusCode).toBe(200);
    });

    it('a family has at most five live branches: a race past it supersedes the branch made longest ago, and that token presented is reuse', async () => {
      const rt0 = (await tokensFor(t, alice, 'cli')).refresh_token!;
      /** Three processes refreshing `token` at once: the three answers' refresh tokens. */
      const race = async (token: string) => {
        const answers = await Promise.all([refresh(t, 'cli', token), refresh(t, 'cli', token), refresh(t, 'cli', token)]);
        expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200]);
        return answers.map((a) => a.json().refresh_token as string);
      };
      const [a, b, c] = await race(rt0); // three branches
      t.clock.advance(30);
      const [c1, c2, c3] = await race(c!); // five
      const live = async (token: string) => (await t.store.findRefreshToken(refreshTokenKey(token)))?.supersededAt === undefined;
      for (const token of [a!, b!, c1!, c2!, c3!]) expect(await live(token)).toBe(true);
      t.clock.advance(30);
      const newest = await race(c3!); // seven: the two oldest tips (a and b, the first race's) are pruned
      for (const token of [c1!, c2!, ...newest]) expect(await live(token)).toBe(true);
      expect(await live(a!)).toBe(false);
      expect(await live(b!)).toBe(false);
      // Each surviving branch still works; then a pruned token turns up: reuse, and the family is revoked.
      t.clock.advance(30);
      const onwards = await refresh(t, 'cli', c1!);
      expect(onwards.statusCode).toBe(200);
      await expectError(await refresh(t, 'cli', a!), 'invalid_grant');
      for (const token of [onwards.json().refresh_token, c2!, ...newest]) await expectError(await refresh(t, 'cli', token), 'invalid_grant');
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

    it('three concurrent refreshes of one token (three racing processes): each gets its own pair, and each goes on', async () => {
      const first = await tokensFor(t, alice, 'cli');
      const results = await Promise.all(Array.from({ length: 3 }, () => refresh(t, 'cli', first.refresh_token!)));
      expect(results.map((r) => r.statusCode)).toEqual([200, 200, 200]);
      const tokens = results.map((r) => r.json().refresh_token as string);
      expect(new Set(tokens).size).toBe(3);
      t.clock.advance(60);
      for (const token of tokens) expect((await refresh(t, 'cli', token)).statusCode).toBe(200);
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
      expect((await refresh(t, 'cli', second.refresh_token)).statusCode).toBe(200); // the holder rotates on
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

// An answer lost after its rotation committed (the server or the connection died, the client was
// killed): the client still holds only the token it sent, and presents it again after a restart or
// a back-off, past the grace window.
describe('a rotation whose answer was lost (LATCHKEY_RETRY_WINDOW)', () => {
  const userinfo = (token: string) => t.app.inject({ method: 'GET', url: '/userinfo', headers: { authorization: `Bearer ${token}` } });

  it('the same token presented again 8 s later (past the grace, within the window) gets a fresh pair; the lost pair is revoked, refresh and access token', async () => {
    const first = await tokensFor(t, alice, 'cli');
    const lost = (await refresh(t, 'cli', first.refresh_token!)).json(); // the client never sees this answer
    t.clock.advance(8);
    const retried = await refresh(t, 'cli', first.refresh_token!);
    expect(retried.statusCode).toBe(200);
    const pair = retried.json();
    expect(pair.refresh_token).not.toBe(lost.refresh_token);
    expect((await userinfo(lost.access_token)).statusCode).toBe(401);
    expect((await userinfo(pair.access_token)).statusCode).toBe(200);
    // The client goes on with what it got; the family lives on.
    t.clock.advance(60);
    const next = await refresh(t, 'cli', pair.refresh_token);
    expect(next.statusCode).toBe(200);
    expect((await userinfo(next.json().access_token)).statusCode).toBe(200);
  });

  it('retries racing each other (the processes of one CLI after an outage) each get a pair, and each goes on; nothing is revoked', async () => {
    const first = await tokensFor(t, alice, 'cli');
    await refresh(t, 'cli', first.refresh_token!);
    t.clock.advance(8);
    const retries = await Promise.all([
      refresh(t, 'cli', first.refresh_token!),
      refresh(t, 'cli', first.refresh_token!),
      refresh(t, 'cli', first.refresh_token!),
    ]);
    expect(retries.map((r) => r.statusCode)).toEqual([200, 200, 200]);
    const pairs = retries.map((r) => r.json());
    for (const pair of pairs) expect((await userinfo(pair.access_token)).statusCode).toBe(200);
    t.clock.advance(10);
    for (const pair of pairs) {
      const next = await refresh(t, 'cli', pair.refresh_token);
      expect(next.statusCode).toBe(200);
      expect((await userinfo(next.json().access_token)).statusCode).toBe(200);
    }
  });

  it('a lost pair that turns up later is dead, and presenting it is reuse: the whole family is revoked (RFC 9700 §4.14.2)', async () => {
    const first = await tokensFor(t, alice, 'cli');
    const lost = (await refresh(t, 'cli', first.refresh_token!)).json();
    t.clock.advance(8);
    const pair = (await refresh(t, 'cli', first.refresh_token!)).json(); // say a thief who stole the first token
    await expectError(await refresh(t, 'cli', lost.refresh_token), 'invalid_grant'); // the rightful holder comes back
    await expectError(await refresh(t, 'cli', pair.refresh_token), 'invalid_grant');
    expect((await userinfo(pair.access_token)).statusCode).toBe(401);
  });

  it('no retry once the successor has been used: that is theft, and the family is revoked', async () => {
    const first = await tokensFor(t, alice, 'cli');
    const second = (await refresh(t, 'cli', first.refresh_token!)).json();
    t.clock.advance(3);
    const third = (await refresh(t, 'cli', second.refresh_token)).json();
    t.clock.advance(5); // 8 s after the first rotation: inside the window, but a successor was used
    await expectError(await refresh(t, 'cli', first.refresh_token!), 'invalid_grant');
    await expectError(await refresh(t, 'cli', third.refresh_token), 'invalid_grant');
  });

  it('a restart loop is not a way to mint pairs: the sixth retry of one token revokes the family, even within the longest window', async () => {
    await t.close();
    await setUp({ LATCHKEY_RETRY_WINDOW: '30' });
    const first = await tokensFor(t, alice, 'cli');
    await refresh(t, 'cli', first.refresh_token!);
    let last = '';
    t.clock.advance(2); // past the grace from the first retry on
    for (let retry = 1; retry <= 5; retry++) {
      t.clock.advance(4);
      const res = await refresh(t, 'cli', first.refresh_token!);
      expect(res.statusCode).toBe(200);
      last = res.json().refresh_token;
    }
    t.clock.advance(4); // 26 s: inside the window, past the count
    await expectError(await refresh(t, 'cli', first.refresh_token!), 'invalid_grant');
    await expectError(await refresh(t, 'cli', last), 'invalid_grant');
  });

  it('LATCHKEY_RETRY_WINDOW=0 turns retries off: past the grace window a reuse is theft', async () => {
    await t.close();
    await setUp({ LATCHKEY_RETRY_WINDOW: '0' });
    const first = await tokensFor(t, alice, 'cli');
    const second = (await refresh(t, 'cli', first.refresh_token!)).json();
    t.clock.advance(6);
    await expectError(await refresh(t, 'cli', first.refresh_token!), 'invalid_grant');
    await expectError(await refresh(t, 'cli', second.refresh_token), 'invalid_grant');
  });
});
