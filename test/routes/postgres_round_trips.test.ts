/**
 * How many statements reach PostgreSQL for the device flow's requests, counted at the driver: each
 * is a round trip on the request's path, and on PostgreSQL those, not the CPU, bound the rate. The
 * server is set up as `latchkey serve` sets it up (the directory cache, the transaction deadline),
 * and warmed by one flow first, so that what is counted is the steady state.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import pg from 'pg';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { bootstrap } from '../../src/bootstrap.js';
import { manualClock, type ManualClock } from '../../src/clock.js';
import { configFrom } from '../../src/config.js';
import { normalizeUserCode, userCodeDigest } from '../../src/oauth/user_code.js';
import { PostgresStore } from '../../src/store/postgres/postgres_store.js';
import type { UserRecord } from '../../src/store/store.js';
import { addApi, addClient, addUser, deviceGrantType, form } from '../helpers/app.js';
import { describeWithPostgres, freshSchema, pgTestUrl } from '../helpers/postgres.js';

describeWithPostgres('PostgreSQL round trips of the device flow', () => {
  let app: FastifyInstance;
  let store: PostgresStore;
  let clock: ManualClock;
  let alice: UserRecord;

  beforeAll(async () => {
    clock = manualClock();
    const config = configFrom({
      LATCHKEY_ISSUER: 'http://latchkey.test',
      LATCHKEY_SECRET_KEY: 'K'.repeat(43),
      LATCHKEY_BOOTSTRAP_PASSWORD: 'bootstrap-password',
    });
    store = await PostgresStore.open({ url: pgTestUrl!, schema: freshSchema(), directoryCache: true, transactionDeadline: true });
    await bootstrap(store, config, clock);
    await addClient(store, 'tv', { name: 'Living Room TV' });
    await addApi(store, 'https://api.example.com');
    alice = await addUser(store, 'alice');
    app = await buildApp({ config, store, clock, logger: false, sleep: async () => undefined });
    await app.ready();
  });
  afterAll(async () => {
    await app?.close();
    await store?.close();
  });

  /** The statements sent to PostgreSQL while `work` runs (every client's, the pool's included). */
  async function statementsDuring<T>(work: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
    const statements: string[] = [];
    // Kept to be called with the client as `this`, and put back afterwards.
    // eslint-disable-next-line @typescript-eslint/unbound-method
    const query = pg.Client.prototype.query;
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const first = args[0];
      statements.push(typeof first === 'string' ? first : String((first as { text?: string }).text));
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    try {
      return { result: await work(), statements };
    } finally {
      pg.Client.prototype.query = query;
    }
  }

  async function deviceFlow(): Promise<{ authorization: string[]; issuance: string[]; pending: string[] }> {
    const started = await statementsDuring(() =>
      app.inject({
        method: 'POST',
        url: '/oauth/device/code',
        ...form({ client_id: 'tv', scope: 'openid offline_access', audience: 'https://api.example.com' }),
      }),
    );
    expect(started.result.statusCode).toBe(200);
    const { device_code, user_code } = started.result.json<{ device_code: string; user_code: string }>();
    const poll = () => app.inject({ method: 'POST', url: '/oauth/token', ...form({ grant_type: deviceGrantType, device_code, client_id: 'tv' }) });
    const pending = await statementsDuring(poll);
    expect(pending.result.json().error).toBe('authorization_pending');
    const grant = (await store.findDeviceGrantByUserCode(userCodeDigest(app.services.userCodeKey, normalizeUserCode(user_code)!)))!;
    expect(await store.approveDeviceGrant(grant.id, alice.id, Math.floor(clock()), ['pwd'], Math.floor(clock()))).toBe(true);
    clock.advance(5);
    const issued = await statementsDuring(poll);
    expect(issued.result.statusCode).toBe(200);
    expect(issued.result.json().refresh_token).toEqual(expect.any(String));
    return { authorization: started.statements, pending: pending.statements, issuance: issued.statements };
  }

  // Issuance: the grant read, then one statement that spends it and stores the refresh token under
  // the user's revocation guard; the third, at most once every few seconds, checks for new signing
  // keys. Authorization: the rate limit's counter and the grant's insert. A pending poll: the read
  // and the compare-and-set of its time.
  it('issuing tokens for an approved device takes at most 3 round trips; authorizing a device and a pending poll take at most 2', async () => {
    await deviceFlow();
    const counted = await deviceFlow();
    // A failure shows what was sent, so that a new statement on the path is seen by name.
    expect(counted.issuance.length, counted.issuance.join('\n---\n')).toBeLessThanOrEqual(3);
    expect(counted.authorization.length, counted.authorization.join('\n---\n')).toBeLessThanOrEqual(2);
    expect(counted.pending.length, counted.pending.join('\n---\n')).toBeLessThanOrEqual(2);
  });
});
