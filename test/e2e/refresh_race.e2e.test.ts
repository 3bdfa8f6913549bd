/**
 * Refreshes that race: two processes on one machine (two terminals, an agent and its tools) refresh
 * the same token at the same moment. Over a real socket, the requests sent together (Promise.all),
 * on SQLite (a file) and on PostgreSQL (two instances on one database, the requests spread over
 * both, so the race is between connections): within LATCHKEY_REFRESH_REUSE_GRACE and the reuse
 * count every request succeeds, the family is not revoked, and every answer stays usable — its
 * access token works and its refresh token refreshes again. Past the count, or past the grace (and
 * the lost-answer window), the old token is theft and the whole family is revoked (RFC 9700
 * §4.14.2). The clock is injected, so "past the grace" needs no sleeping.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { bootstrap } from '../../src/bootstrap.js';
import { manualClock, type ManualClock } from '../../src/clock.js';
import { configFrom } from '../../src/config.js';
import { graceSuccessorLimit } from '../../src/oauth/refresh_tokens.js';
import { normalizeUserCode, userCodeDigest } from '../../src/oauth/user_code.js';
import { PostgresStore } from '../../src/store/postgres/postgres_store.js';
import type { Store, UserRecord } from '../../src/store/store.js';
import { addClient, addUser, deviceGrantType, testApp } from '../helpers/app.js';
import { describeWithPostgres, freshSchema, pgTestUrl } from '../helpers/postgres.js';

/** Where the requests go: one or more instances on one database, and the clock they share. */
interface Deployment {
  bases: string[];
  /** The instances' user-code key: the test approves the device in the store, as the person's browser would. */
  userCodeKey: string;
  store: Store;
  clock: ManualClock;
  close(): Promise<void>;
}

interface Answer {
  status: number;
  body: Record<string, string>;
}

/** The n-th instance's address (round robin). */
const baseOf = (d: Deployment, n: number): string => d.bases[n % d.bases.length] ?? '';

/** A request to the n-th instance, over the socket. */
async function post(d: Deployment, n: number, path: string, fields: Record<string, string>): Promise<Answer> {
  const res = await fetch(baseOf(d, n) + path, { method: 'POST', body: new URLSearchParams(fields) });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

const refresh = (d: Deployment, n: number, refreshToken: string) =>
  post(d, n, '/oauth/token', { grant_type: 'refresh_token', client_id: 'cli', refresh_token: refreshToken });

async function userinfoStatus(d: Deployment, n: number, accessToken: string): Promise<number> {
  const res = await fetch(`${baseOf(d, n)}/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } });
  await res.arrayBuffer();
  return res.status;
}

/** A fresh sign-in of `user` through the device flow: its first access and refresh token. */
async function signedIn(d: Deployment, user: UserRecord): Promise<{ access_token: string; refresh_token: string }> {
  const device = await post(d, 0, '/oauth/device/code', { client_id: 'cli', scope: 'openid offline_access' });
  expect(device.status).toBe(200);
  const grant = await d.store.findDeviceGrantByUserCode(userCodeDigest(d.userCodeKey, normalizeUserCode(device.body.user_code ?? '')!));
  const now = Math.floor(d.clock());
  expect(await d.store.approveDeviceGrant(grant!.id, user.id, now, ['pwd'], now)).toBe(true);
  const tokens = await post(d, 1, '/oauth/token', { grant_type: deviceGrantType, device_code: device.body.device_code ?? '', client_id: 'cli' });
  expect(tokens.status).toBe(200);
  return { access_token: tokens.body.access_token ?? '', refresh_token: tokens.body.refresh_token ?? '' };
}

/** `count` refreshes of one token sent at once, spread over the instances. */
function atOnce(d: Deployment, refreshToken: string, count: number): Promise<Answer[]> {
  return Promise.all(Array.from({ length: count }, (_, n) => refresh(d, n, refreshToken)));
}

/** Every answer is usable: its access token works, its refresh token refreshes, and that successor's access token works too. */
async function expectEachUsable(d: Deployment, answers: Answer[]): Promise<void> {
  for (const [n, answer] of answers.entries()) {
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(await userinfoStatus(d, n, answer.body.access_token ?? '')).toBe(200);
  }
  d.clock.advance(30); // later, each process refreshes its own token
  for (const [n, answer] of answers.entries()) {
    const onwards = await refresh(d, n + 1, answer.body.refresh_token ?? '');
    expect({ answer: n, status: onwards.status, body: onwards.body }).toMatchObject({ status: 200 });
    expect(await userinfoStatus(d, n, onwards.body.access_token ?? '')).toBe(200);
  }
}

/** The family is revoked: none of these refresh tokens refreshes, none of these access tokens works. */
async function expectFamilyRevoked(d: Deployment, refreshTokens: string[], accessTokens: string[]): Promise<void> {
  for (const [n, token] of refreshTokens.entries()) expect((await refresh(d, n, token)).body.error).toBe('invalid_grant');
  for (const [n, token] of accessTokens.entries()) expect(await userinfoStatus(d, n, token)).toBe(401);
}

function raceCases(deploy: () => Promise<Deployment>): void {
  let d: Deployment;
  let people = 0;
  /** Each case signs in a person of its own, so that no family is shared between cases. */
  const person = () => addUser(d.store, `racer${++people}`);

  beforeAll(async () => {
    d = await deploy();
    await addClient(d.store, 'cli');
  }, 30_000);
  afterAll(() => d?.close());

  it('two refreshes of one token at once: both succeed, the family lives, and each answer stays usable', async () => {
    const first = await signedIn(d, await person());
    const answers = await atOnce(d, first.refresh_token, 2);
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    expect(new Set(answers.map((a) => a.body.refresh_token)).size).toBe(2);
    await expectEachUsable(d, answers);
  });

  it(`the reuse count + 1 (${graceSuccessorLimit + 1}) at once: every one succeeds and each answer stays usable`, async () => {
    const first = await signedIn(d, await person());
    const answers = await atOnce(d, first.refresh_token, graceSuccessorLimit + 1);
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    expect(new Set(answers.map((a) => a.body.refresh_token)).size).toBe(graceSuccessorLimit + 1);
    await expectEachUsable(d, answers);
  });

  it('past the count: of count + 2 at once one is refused as theft, and the whole family is revoked', async () => {
    const first = await signedIn(d, await person());
    const answers = await atOnce(d, first.refresh_token, graceSuccessorLimit + 2);
    const issued = answers.filter((a) => a.status === 200);
    expect(issued).toHaveLength(graceSuccessorLimit + 1);
    expect(answers.filter((a) => a.status !== 200).map((a) => a.body.error)).toEqual(['invalid_grant']);
    await expectFamilyRevoked(
      d,
      issued.map((a) => a.body.refresh_token ?? ''),
      [first.access_token, ...issued.map((a) => a.body.access_token ?? '')],
    );
  });

  it('past the grace (and the lost-answer window): the same token again is theft, and the family is revoked with every branch', async () => {
    const first = await signedIn(d, await person());
    const answers = await atOnce(d, first.refresh_token, 2);
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    d.clock.advance(11);
    expect((await refresh(d, 0, first.refresh_token)).body.error).toBe('invalid_grant');
    await expectFamilyRevoked(
      d,
      answers.map((a) => a.body.refresh_token ?? ''),
      answers.map((a) => a.body.access_token ?? ''),
    );
  });
}

describe('SQLite: one server on a database file', () => {
  raceCases(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-race-'));
    const t = await testApp({}, { path: join(dir, 'latchkey.db') });
    const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    return {
      bases: [base],
      userCodeKey: t.app.services.userCodeKey,
      store: t.store,
      clock: t.clock,
      async close() {
        await t.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  });
});

describeWithPostgres('PostgreSQL: two server instances on one database', () => {
  raceCases(async () => {
    const schema = freshSchema();
    const clock = manualClock();
    const config = configFrom({
      LATCHKEY_ISSUER: 'http://latchkey.test',
      LATCHKEY_SECRET_KEY: 'K'.repeat(43),
      LATCHKEY_BOOTSTRAP_PASSWORD: 'bootstrap-password',
    });
    // Each opened as the server opens it (store/open.ts): the directory cache, and time limits on transactions.
    const open = () => PostgresStore.open({ url: pgTestUrl!, schema, directoryCache: true, transactionDeadline: true });
    const stores = [await open(), await open()];
    await bootstrap(stores[0]!, config, clock);
    const apps: FastifyInstance[] = [];
    for (const store of stores) apps.push(await buildApp({ config, store, clock, logger: false, sleep: async () => undefined }));
    const bases = await Promise.all(apps.map((app) => app.listen({ port: 0, host: '127.0.0.1' })));
    return {
      bases,
      userCodeKey: apps[0]!.services.userCodeKey,
      store: stores[0]!,
      clock,
      async close() {
        for (const app of apps) await app.close();
        for (const store of stores) await store.close();
      },
    };
  });
});
