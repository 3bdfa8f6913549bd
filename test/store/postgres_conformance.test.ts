/**
 * Runs the Store conformance suite (test/store/conformance.ts) against PostgreSQL, then what only a
 * shared database has: several instances (each its own pool, as separate processes would have)
 * racing for the same single-use record, and starting, hence migrating, at the same moment.
 *
 * Needs LATCHKEY_TEST_PG_URL (e.g. postgres://latchkey@127.0.0.1:55432/postgres); every store gets
 * a fresh schema there, dropped at the end. Without the variable the suite is skipped, unless
 * LATCHKEY_REQUIRE_PG=1 (CI), where a missing database must fail rather than pass by skipping.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { configFrom } from '../../src/config.js';
import { readMigrations } from '../../src/store/migration_files.js';
import { openConfiguredStore } from '../../src/store/open.js';
import { PostgresStore } from '../../src/store/postgres/postgres_store.js';
import { DuplicateError } from '../../src/store/store.js';
import { migrate } from '../../src/store/postgres/migrate.js';
import { postgresMigrationsDir } from '../../src/paths.js';
import { api, authorizationCode, client, consent, deviceGrant, emailToken, passkey, refreshToken, session, t0, totp, user } from '../helpers/records.js';
import { storeConformance } from './conformance.js';
import { waitFor } from '../helpers/wait.js';

const url = process.env.LATCHKEY_TEST_PG_URL?.trim() || undefined;
const required = process.env.LATCHKEY_REQUIRE_PG === '1';

const schemas: string[] = [];

function freshSchema(): string {
  const schema = `latchkey_test_${randomBytes(6).toString('hex')}`;
  schemas.push(schema);
  return schema;
}

// Hundreds of schemas, one or more per test, some 20 ms each to drop on an idle machine: the hook
// gets the time that takes on a busy one, beyond the default limit meant for a single step.
afterAll(async () => {
  if (!url || schemas.length === 0) return;
  const admin = new pg.Pool({ connectionString: url, max: 1 });
  try {
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await admin.end();
  }
  // Hundreds of schemas to drop: given time on a loaded machine.
}, 180_000);

function openStore(schema = freshSchema(), now = t0, directoryCache = false): Promise<PostgresStore> {
  return PostgresStore.open({ url: url!, schema, now, directoryCache });
}

/** Two instances on one fresh schema, closed when `fn` ends. */
async function withTwoInstances(fn: (a: PostgresStore, b: PostgresStore) => Promise<void>): Promise<void> {
  const schema = freshSchema();
  const a = await openStore(schema);
  const b = await openStore(schema);
  try {
    await a.createUser(user());
    await a.createClient(client());
    await fn(a, b);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
}

/** 20 calls at once, alternating between the two instances. */
const racing = <T>(a: PostgresStore, b: PostgresStore, call: (store: PostgresStore, n: number) => Promise<T>): Promise<T[]> =>
  Promise.all(Array.from({ length: 20 }, (_, n) => call(n % 2 === 0 ? a : b, n)));

if (!url && required) {
  describe('PostgreSQL store', () => {
    it('has a database to run against (LATCHKEY_REQUIRE_PG=1)', () => {
      expect.fail('LATCHKEY_REQUIRE_PG=1 but LATCHKEY_TEST_PG_URL is not set: the PostgreSQL store would go untested');
    });
  });
}

const suite = url ? describe : describe.skip;

suite('PostgreSQL store (LATCHKEY_TEST_PG_URL)', () => {
  storeConformance('PostgreSQL', () => openStore());
  // The server's store: the same cases through the directory cache.
  storeConformance('PostgreSQL with the directory cache', () => openStore(freshSchema(), t0, true));

  describe('the directory cache (server mode)', () => {
    /** Polls until `check` holds: an announcement from another instance arrives within milliseconds. */
    async function eventually(check: () => Promise<boolean>): Promise<number> {
      const started = Date.now();
      await waitFor(check, { timeout: 5000, interval: 5, what: 'the announcement' });
      return Date.now() - started;
    }

    it("serves repeated lookups from memory, and sees another instance's changes to clients, users, roles, APIs and connectors once announced", async () => {
      const schema = freshSchema();
      const server = await openStore(schema, t0, true);
      const cli = await openStore(schema);
      try {
        expect(server.directoryCacheActive).toBe(true);
        await cli.createUser(user());
        await cli.createClient(client());
        await cli.createApi(api());
        // Once the announcements of those writes have arrived, a second lookup is the same frozen
        // record: it came from the cache.
        await eventually(async () => (await server.findClient('cli')) === (await server.findClient('cli')));
        const found = await server.findClient('cli');
        expect(found?.disabled).toBe(false);
        expect(Object.isFrozen(found)).toBe(true);
        expect((await server.findUserById('user-alice'))?.disabled).toBe(false);
        expect((await server.findApi('https://api.example.com'))?.scopes).toEqual([]);
        expect(await server.listConnectors()).toEqual([]);

        await cli.setClientDisabled('cli', true);
        await eventually(async () => (await server.findClient('cli'))?.disabled === true);
        await cli.setUserDisabled('alice', true, t0 + 1);
        await eventually(async () => (await server.findUserById('user-alice'))?.disabled === true);
        await cli.createRole({ name: 'ops', description: undefined, permissions: [], createdAt: t0 });
        await cli.grantRole('user-alice', 'ops', t0);
        await eventually(async () => (await server.findUserById('user-alice'))?.roles.includes('ops') === true);
        // A role removed takes its grants along (a cascade): that is announced too.
        await cli.removeRole('ops');
        await eventually(async () => (await server.findUserById('user-alice'))?.roles.length === 0);
        await cli.updateApi(api({ scopes: ['read'] }));
        await eventually(async () => (await server.findApi('https://api.example.com'))?.scopes.includes('read') === true);
        await cli.createConnector({
          id: 'sso',
          type: 'oidc',
          name: 'SSO',
          config: { issuer: 'https://sso.example.com', clientId: 'latchkey' },
          secret: undefined,
          createdAt: t0,
        });
        await eventually(async () => (await server.listConnectors()).length === 1);
        await cli.removeClient('cli', t0 + 2);
        await eventually(async () => (await server.findClient('cli')) === undefined);
      } finally {
        await Promise.all([server.close(), cli.close()]);
      }
    });

    it('its own writes are seen by its next lookup at once', async () => {
      const server = await openStore(freshSchema(), t0, true);
      try {
        await server.createUser(user());
        await server.createClient(client());
        expect((await server.findClient('cli'))?.disabled).toBe(false);
        await server.setClientDisabled('cli', true);
        expect((await server.findClient('cli'))?.disabled).toBe(true);
        expect((await server.findUserById('user-alice'))?.tokensRevokedAt).toBeUndefined();
        await server.revokeUserTokens('alice', t0 + 5);
        expect((await server.findUserById('user-alice'))?.tokensRevokedAt).toBe(t0 + 5);
      } finally {
        await server.close();
      }
    });

    it('caches nothing while its listening connection is down, and resumes once it is back', async () => {
      const schema = freshSchema();
      const server = await openStore(schema, t0, true);
      const cli = await openStore(schema);
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      try {
        await cli.createUser(user());
        await cli.createClient(client());
        await server.findClient('cli');
        // The listening connection is cut (a database restart, a network break): until it is back,
        // a change announced meanwhile could be missed, so every lookup reads the database.
        await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [`latchkey directory cache ${schema}`]);
        await eventually(async () => !server.directoryCacheActive);
        await cli.setClientDisabled('cli', true);
        expect((await server.findClient('cli'))?.disabled).toBe(true);
        await eventually(async () => server.directoryCacheActive);
        await cli.setClientDisabled('cli', false);
        await eventually(async () => (await server.findClient('cli'))?.disabled === false);
      } finally {
        await admin.end();
        await Promise.all([server.close(), cli.close()]);
      }
    });
  });

  describe('two instances racing on one record', () => {
    it('consumeDeviceGrant: exactly one wins', async () => {
      await withTwoInstances(async (a, b) => {
        await a.createDeviceGrant(deviceGrant());
        expect(await a.approveDeviceGrant('grant-1', 'user-alice', t0, ['pwd'], t0 + 10)).toBe(true);
        const results = await racing(a, b, (store) => store.consumeDeviceGrant('grant-1', t0 + 20));
        expect(results.filter((r) => r !== undefined)).toHaveLength(1);
        expect((await b.findDeviceGrantByDeviceCode('device-grant-1'))?.status).toBe('consumed');
      });
    });

    it('redeemDeviceGrant: exactly one wins, and only its refresh token is stored', async () => {
      await withTwoInstances(async (a, b) => {
        await a.createDeviceGrant(deviceGrant());
        expect(await a.approveDeviceGrant('grant-1', 'user-alice', t0, ['pwd'], t0 + 10)).toBe(true);
        const results = await racing(a, b, (store, n) =>
          store.redeemDeviceGrant('grant-1', t0 + 20, {
            token: refreshToken({ id: `rt-${n}`, tokenHash: `hash-${n}`, familyId: `family-${n}` }),
            guard: { userTokensRevokedAt: undefined },
          }),
        );
        const winner = results.findIndex((r) => r !== undefined);
        expect(results.filter((r) => r !== undefined)).toHaveLength(1);
        const stored = await Promise.all(results.map((_, n) => b.findRefreshToken(`hash-${n}`)));
        expect(stored.map((t, n) => [n, t !== undefined]).filter(([, found]) => found)).toEqual([[winner, true]]);
      });
    });

    it('consumeAuthorizationCode: exactly one wins, and its ids are the ones stored', async () => {
      await withTwoInstances(async (a, b) => {
        await a.createAuthorizationCode(authorizationCode());
        const results = await racing(a, b, (store, n) =>
          store.consumeAuthorizationCode('code-hash-1', t0 + 5, { accessTokenJti: `jti-${n}`, refreshFamilyId: `family-${n}` }),
        );
        const winners = results.filter((r) => r !== undefined);
        expect(winners).toHaveLength(1);
        const stored = await b.findAuthorizationCode('code-hash-1');
        expect(stored?.accessTokenJti).toBe(winners[0]?.accessTokenJti);
        expect(stored?.refreshFamilyId).toBe(winners[0]?.refreshFamilyId);
      });
    });

    it('rotateRefreshToken: exactly one wins and inserts its successor; the losers insert nothing', async () => {
      await withTwoInstances(async (a, b) => {
        await a.createRefreshToken(refreshToken({ id: 'old', tokenHash: 'old' }));
        const successor = (n: number) => refreshToken({ id: `next-${n}`, tokenHash: `next-${n}`, createdAt: t0 + 10 });
        const results = await racing(a, b, (store, n) => store.rotateRefreshToken('old', successor(n), t0 + 10));
        expect(results.filter((won) => won)).toHaveLength(1);
        const stored = await Promise.all(results.map((_, n) => a.findRefreshToken(`next-${n}`)));
        expect(stored.filter((t) => t !== undefined)).toHaveLength(1);
        expect(stored[results.indexOf(true)]).toStrictEqual(successor(results.indexOf(true)));
      });
    });

    it('pollDeviceGrant: every poll sees the one before it (read-compute-write is one step)', async () => {
      await withTwoInstances(async (a, b) => {
        await a.createDeviceGrant(deviceGrant({ interval: 5 }));
        const seen = await racing(a, b, (store, n) => store.pollDeviceGrant('device-grant-1', 'cli', t0 * 1000 + n, (before) => before.interval + 5));
        // Twenty polls that each grew the interval by 5 from what the previous one stored.
        expect(seen.map((g) => g!.interval).sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, n) => 5 + 5 * n));
        expect((await a.findDeviceGrantByDeviceCode('device-grant-1'))?.interval).toBe(5 + 5 * 20);
      });
    });

    it('addGraceSuccessor hands out at most `limit` grace successors, and every one of them stays live', async () => {
      await withTwoInstances(async (a, b) => {
        await a.createRefreshToken(refreshToken({ id: 'old', tokenHash: 'old' }));
        expect(await a.rotateRefreshToken('old', refreshToken({ id: 'first', tokenHash: 'first', parentId: 'old' }), t0 + 1)).toBe(true);
        const results = await racing(a, b, (store, n) =>
          store.addGraceSuccessor('old', refreshToken({ id: `grace-${n}`, tokenHash: `grace-${n}`, parentId: 'old' }), {
            limit: 3,
            liveBranches: 5,
            now: t0 + 1,
          }),
        );
        expect(results.filter((r) => r === true)).toHaveLength(3);
        expect(results.filter((r) => r === 'limit')).toHaveLength(17);
        for (const [n, r] of results.entries()) {
          const stored = await b.findRefreshToken(`grace-${n}`);
          expect(r === true ? stored?.supersededAt : stored).toBeUndefined();
        }
      });
    });

    it('useTotpStep: of twenty uses of one code, exactly one is accepted', async () => {
      await withTwoInstances(async (a, b) => {
        await a.saveTotp(totp({ lastStep: 1000 }));
        const results = await racing(a, b, (store) => store.useTotpStep('user-alice', 1001));
        expect(results.filter((accepted) => accepted)).toHaveLength(1);
        expect((await b.findTotp('user-alice'))?.lastStep).toBe(1001);
      });
    });

    it('useTotpStep: codes of different steps racing leave the latest accepted one as the mark', async () => {
      await withTwoInstances(async (a, b) => {
        await a.saveTotp(totp({ lastStep: 1000 }));
        await racing(a, b, (store, n) => store.useTotpStep('user-alice', 1001 + n));
        expect((await b.findTotp('user-alice'))?.lastStep).toBe(1020);
      });
    });

    it('useRecoveryCode: exactly one spends it', async () => {
      await withTwoInstances(async (a, b) => {
        await a.replaceRecoveryCodes('user-alice', ['h1', 'h2'], t0);
        const results = await racing(a, b, (store, n) => store.useRecoveryCode('user-alice', 'h1', t0 + n));
        expect(results.filter((spent) => spent)).toHaveLength(1);
        expect(await b.countRecoveryCodes('user-alice')).toBe(1);
      });
    });

    it('replaceRecoveryCodes racing each other and a reset leave at most one set, whole', async () => {
      await withTwoInstances(async (a, b) => {
        const sets = Array.from({ length: 20 }, (_, n) => Array.from({ length: 10 }, (_, i) => `set-${n}-${i}`));
        await racing(a, b, async (store, n) => {
          if (n === 7) await store.resetSecondFactors('user-alice');
          else await store.replaceRecoveryCodes('user-alice', sets[n]!, t0 + n);
        });
        expect([0, 10]).toContain(await a.countRecoveryCodes('user-alice'));
      });
    });

    it('createPasskey: of twenty registrations of one credential id, one is stored and the others are DuplicateError', async () => {
      await withTwoInstances(async (a, b) => {
        const results = await Promise.allSettled(
          Array.from({ length: 20 }, (_, n) => (n % 2 === 0 ? a : b).createPasskey(passkey({ id: 'cred', name: `try ${n}` }))),
        );
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(DuplicateError);
        expect(await a.listPasskeys('user-alice')).toHaveLength(1);
      });
    });

    it('a rotation racing the revocation of its family never leaves a live token in it', async () => {
      await withTwoInstances(async (a, b) => {
        for (let n = 0; n < 20; n++) {
          const familyId = `family-${n}`;
          await a.createRefreshToken(refreshToken({ id: `old-${n}`, tokenHash: `old-${n}`, familyId }));
          const successor = refreshToken({ id: `next-${n}`, tokenHash: `next-${n}`, familyId, createdAt: t0 + 1 });
          await Promise.all([a.rotateRefreshToken(`old-${n}`, successor, t0 + 1), b.revokeRefreshFamily(familyId, t0 + 1)]);
          for (const hash of [`old-${n}`, `next-${n}`]) {
            const token = await a.findRefreshToken(hash);
            if (token) expect(token.revokedAt, `${hash} is in a revoked family`).toBe(t0 + 1);
          }
        }
      });
    });
  });

  describe('two instances racing (accounts)', () => {
    it('useEmailToken: of twenty uses of one link, exactly one wins', async () => {
      await withTwoInstances(async (a, b) => {
        await a.createEmailToken(emailToken());
        const results = await racing(a, b, (store, n) => store.useEmailToken('email-token-hash-1', 'password_reset', t0 + n));
        expect(results.filter((r) => r !== undefined)).toHaveLength(1);
      });
    });

    it('rotations racing endOtherSignIns, withdrawConsent and revokeRefreshFamilyOf never leave a live token in a family they ended', async () => {
      await withTwoInstances(async (a, b) => {
        const endings: Array<(store: PostgresStore, familyId: string) => Promise<unknown>> = [
          (store) => store.endOtherSignIns('user-alice', 'kept', t0 + 1),
          (store) => store.withdrawConsent('user-alice', 'cli', t0 + 1),
          (store, familyId) => store.revokeRefreshFamilyOf(familyId, 'user-alice', t0 + 1),
        ];
        for (let n = 0; n < 30; n++) {
          const familyId = `family-${n}`;
          await a.createRefreshToken(refreshToken({ id: `old-${n}`, tokenHash: `old-${n}`, familyId }));
          const successor = refreshToken({ id: `next-${n}`, tokenHash: `next-${n}`, familyId, parentId: `old-${n}`, createdAt: t0 + 1 });
          await Promise.all([a.rotateRefreshToken(`old-${n}`, successor, t0 + 1), endings[n % endings.length]!(b, familyId)]);
          expect(await a.isRefreshFamilyRevoked(familyId)).toBe(true);
          for (const hash of [`old-${n}`, `next-${n}`]) {
            const token = await a.findRefreshToken(hash);
            if (token) expect(token.revokedAt, `${hash} is in a revoked family`).toBe(t0 + 1);
          }
        }
      });
    });
  });

  describe('two instances racing (roles, machine clients, one-time keys)', () => {
    it('useOnce: of twenty uses of one key, exactly one is true; so of twenty take-overs of an expired key', async () => {
      await withTwoInstances(async (a, b) => {
        const now = await a.databaseTime();
        const fresh = await racing(a, b, (store) => store.useOnce('client_assertion', 'jti-1', now + 600));
        expect(fresh.filter((first) => first)).toHaveLength(1);
        expect(await a.useOnce('client_assertion', 'stale', now - 5)).toBe(true);
        const takeovers = await racing(a, b, (store) => store.useOnce('client_assertion', 'stale', now + 600));
        expect(takeovers.filter((first) => first)).toHaveLength(1);
      });
    });

    it("updateRole: simultaneous replacements of a role's permissions leave one caller's whole list", async () => {
      await withTwoInstances(async (a, b) => {
        const identifier = 'https://api.example.com';
        await a.createApi({ identifier, name: 'API', createdAt: t0, introspectionClients: [], scopes: [] });
        await a.createRole({ name: 'ops', description: undefined, permissions: [], createdAt: t0 });
        await racing(a, b, (store, n) => store.updateRole('ops', { permissions: ['a', 'b', 'c'].map((s) => ({ api: identifier, scope: `${n}-${s}` })) }));
        const scopes = (await a.findRole('ops'))!.permissions.map((p) => p.scope);
        expect(scopes).toHaveLength(3);
        const winner = scopes[0]!.split('-')[0];
        expect(scopes).toEqual([`${winner}-a`, `${winner}-b`, `${winner}-c`]);
      });
    });

    it('grantRole racing removeRole never fails, and leaves no grant of a removed role', async () => {
      await withTwoInstances(async (a, b) => {
        for (let n = 0; n < 20; n++) await a.createRole({ name: `role-${n}`, description: undefined, permissions: [], createdAt: t0 });
        await racing(a, b, async (store, n) => {
          const other = store === a ? b : a;
          await Promise.all([store.grantRole('user-alice', `role-${n}`, t0), other.removeRole(`role-${n}`)]);
        });
        expect(await a.listRoles()).toHaveLength(1);
        expect((await b.findUserById('user-alice'))?.roles).toEqual([]);
      });
    });

    it('registerClient with one initial access token: exactly one registration wins', async () => {
      await withTwoInstances(async (a, b) => {
        await a.createRegistrationToken({ tokenHash: 'it-hash', createdAt: t0, expiresAt: t0 + 3600, usedAt: undefined, clientId: undefined });
        const results = await racing(a, b, (store, n) =>
          store.registerClient(client({ clientId: `dyn_${n}`, registrationAccessTokenHash: `rat-${n}`, tokenEndpointAuthMethod: 'none' }), 'it-hash', t0 + 1),
        );
        expect(results.filter((won) => won)).toHaveLength(1);
        const winner = `dyn_${results.indexOf(true)}`;
        expect((await b.listClients()).map((c) => c.clientId)).toEqual(['cli', winner]);
        expect(await a.findRegistrationToken('it-hash')).toMatchObject({ usedAt: t0 + 1, clientId: winner });
        expect(await a.findClient(winner)).toMatchObject({ registrationAccessTokenHash: `rat-${results.indexOf(true)}`, tokenEndpointAuthMethod: 'none' });
      });
    });

    it('useRegistrationToken from both instances: exactly one spends the token', async () => {
      await withTwoInstances(async (a, b) => {
        await a.createRegistrationToken({ tokenHash: 'it-hash', createdAt: t0, expiresAt: t0 + 3600, usedAt: undefined, clientId: undefined });
        const results = await racing(a, b, (store) => store.useRegistrationToken('it-hash', t0 + 1));
        expect(results.filter((won) => won)).toHaveLength(1);
      });
    });

    it('appendAuditEvents from both instances: every event is stored once, under an id of its own', async () => {
      await withTwoInstances(async (a, b) => {
        const event = (n: number, i: number) => ({
          at: t0 * 1000 + n,
          event: 'user.login',
          actor: undefined,
          userId: 'user-alice',
          clientId: undefined,
          ip: undefined,
          details: { n, i },
        });
        await racing(a, b, (store, n) => store.appendAuditEvents([event(n, 0), event(n, 1), event(n, 2)]));
        const stored = await a.listAuditEvents({ limit: 500 });
        expect(stored).toHaveLength(60);
        expect(new Set(stored.map((e) => e.id)).size).toBe(60);
        // Within one batch the ids follow the order given.
        for (let n = 0; n < 20; n++) {
          const ids = stored
            .filter((e) => e.details.n === n)
            .sort((x, y) => Number(x.details.i) - Number(y.details.i))
            .map((e) => e.id);
          expect([...ids].sort((x, y) => x - y)).toEqual(ids);
        }
      });
    });
  });

  // --- Pushed authorization requests ---
  describe('two instances racing (pushed authorization requests)', () => {
    it('usePushedRequest of one request_uri from both instances: exactly one gets it, with its parameters', async () => {
      await withTwoInstances(async (a, b) => {
        const parameters = { client_id: 'cli', response_type: 'code', state: 'raced' };
        await a.createPushedRequest({ requestHash: 'par-hash', clientId: 'cli', parameters, createdAt: t0, expiresAt: t0 + 60, usedAt: undefined });
        const results = await racing(a, b, (store) => store.usePushedRequest('par-hash', 'cli', t0 + 1));
        const winners = results.filter((r) => r !== undefined);
        expect(winners).toHaveLength(1);
        expect(winners[0]).toStrictEqual({ requestHash: 'par-hash', clientId: 'cli', parameters, createdAt: t0, expiresAt: t0 + 60, usedAt: t0 + 1 });
      });
    });
  });

  describe('migrations', () => {
    const migrationNames = readMigrations(postgresMigrationsDir).map((m) => m.name);

    it('the postgres migrations folder starts with 0001_init.sql', () => {
      expect(migrationNames[0]).toBe('0001_init.sql');
    });

    it('two instances migrating one fresh schema at once both open, and each file is applied and recorded once', async () => {
      const schema = freshSchema();
      const stores = await Promise.all([openStore(schema, t0), openStore(schema, t0 + 1)]);
      const admin = new pg.Pool({ connectionString: url, max: 1 });
      try {
        expect(stores.map((s) => s.appliedMigrations).sort((x, y) => y.length - x.length)).toEqual([migrationNames, []]);
        const { rows } = await admin.query(`SELECT version, name FROM ${schema}.schema_migrations ORDER BY version`);
        expect(rows).toEqual(migrationNames.map((name) => ({ version: Number(name.slice(0, 4)), name })));
        expect(await stores[0].ping()).toBe(true);
        expect(await stores[1].ping()).toBe(true);
      } finally {
        await admin.end();
        await Promise.all(stores.map((s) => s.close()));
      }
    });

    it('reopening applies nothing again and keeps the data', async () => {
      const schema = freshSchema();
      const first = await openStore(schema, t0);
      await first.createUser(user());
      await first.close();
      const second = await openStore(schema, t0 + 100);
      try {
        expect(second.appliedMigrations).toEqual([]);
        expect(await second.findUserByUsername('ALICE')).toEqual(user());
      } finally {
        await second.close();
      }
    });

    it("upgrading to connectors (0006): the first administrator's made-up admin@localhost is not a verified email; real ones are", async () => {
      const schema = freshSchema();
      const pool = new pg.Pool({ connectionString: url, max: 1, options: `-c search_path=${schema}` });
      try {
        const all = readMigrations(postgresMigrationsDir);
        await migrate(
          pool,
          all.filter((m) => m.version < 6),
          t0,
          schema,
        );
        for (const [id, username, email] of [
          ['u1', 'admin', 'admin@localhost'],
          ['u2', 'alice', 'alice@example.com'],
        ]) {
          await pool.query('INSERT INTO users (id, username, email, name, password_hash, disabled, created_at) VALUES ($1, $2, $3, NULL, $4, false, $5)', [
            id,
            username,
            email,
            'scrypt$x',
            t0,
          ]);
        }
        await migrate(pool, all, t0, schema);
        const { rows } = await pool.query('SELECT username, email_verified, source FROM users ORDER BY username');
        expect(rows).toEqual([
          { username: 'admin', email_verified: false, source: 'local' },
          { username: 'alice', email_verified: true, source: 'local' },
        ]);
      } finally {
        await pool.end();
      }
    });

    it("upgrading to second factors (0007): sessions, codes, refresh tokens and device grants made before read amr [] and acrValues ''", async () => {
      const schema = freshSchema();
      const pool = new pg.Pool({ connectionString: url, max: 1, options: `-c search_path=${schema}` });
      try {
        const all = readMigrations(postgresMigrationsDir);
        await migrate(
          pool,
          all.filter((m) => m.version < 7),
          t0,
          schema,
        );
        await pool.query(
          "INSERT INTO users (id, username, email, name, password_hash, disabled, created_at) VALUES ('user-alice', 'alice', 'a@example.com', NULL, 'x', false, $1)",
          [t0],
        );
        await pool.query(
          `INSERT INTO clients (client_id, name, secret_hash, redirect_uris, grant_types, require_pkce, first_party, built_in, created_at)
           VALUES ('cli', 'Command line', NULL, '[]', '["device_code"]', true, false, false, $1)`,
          [t0],
        );
        await pool.query("INSERT INTO sessions (id_hash, user_id, auth_time, created_at, expires_at) VALUES ('old-session', 'user-alice', $1, $1, $2)", [
          t0,
          t0 + 3600,
        ]);
        await pool.query(
          `INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri, scope, audience, auth_time, created_at, expires_at)
           VALUES ('old-code', 'cli', 'user-alice', 'http://127.0.0.1/cb', 'openid', 'https://api.example.com', $1, $1, $2)`,
          [t0, t0 + 60],
        );
        await pool.query(
          `INSERT INTO refresh_tokens (id, token_hash, family_id, client_id, user_id, scope, audience, auth_time, created_at, expires_at, family_expires_at)
           VALUES ('old-rt', 'old-rt', 'old-family', 'cli', 'user-alice', 'openid', 'https://api.example.com', $1, $1, $2, $2)`,
          [t0, t0 + 60],
        );
        await pool.query(
          `INSERT INTO device_grants (id, device_code_hash, user_code_hash, client_id, scope, audience, status, poll_interval, user_id, auth_time,
             requester_ip, requester_user_agent, created_at, expires_at, decided_at)
           VALUES ('old-grant', 'old-device', 'old-user', 'cli', 'openid', 'https://api.example.com', 'approved', 5, 'user-alice', $1, '203.0.113.9', 'cli', $1, $2, $1)`,
          [t0, t0 + 900],
        );
      } finally {
        await pool.end();
      }
      const store = await openStore(schema);
      try {
        expect(store.appliedMigrations).toEqual(migrationNames.filter((name) => Number(name.slice(0, 4)) >= 7));
        expect((await store.findSession('old-session', t0))?.amr).toEqual([]);
        expect((await store.findAuthorizationCode('old-code'))?.amr).toEqual([]);
        expect((await store.findRefreshToken('old-rt'))?.amr).toEqual([]);
        expect(await store.findDeviceGrantByDeviceCode('old-device')).toMatchObject({ amr: [], acrValues: '', status: 'approved' });
        // And new rows keep theirs.
        await store.createSession(session({ idHash: 'new-session', amr: ['pwd', 'otp'] }));
        expect((await store.findSession('new-session', t0))?.amr).toEqual(['pwd', 'otp']);
      } finally {
        await store.close();
      }
    });

    it('upgrading to accounts (0008): every session made before gets a public id of its own, and so does one a previous version still inserts', async () => {
      const schema = freshSchema();
      const pool = new pg.Pool({ connectionString: url, max: 1, options: `-c search_path=${schema}` });
      try {
        const all = readMigrations(postgresMigrationsDir);
        await migrate(
          pool,
          all.filter((m) => m.version < 8),
          t0,
          schema,
        );
        await pool.query(
          "INSERT INTO users (id, username, email, name, password_hash, disabled, created_at) VALUES ('user-alice', 'alice', 'a@example.com', NULL, 'x', false, $1)",
          [t0],
        );
        await pool.query(
          `INSERT INTO clients (client_id, name, secret_hash, redirect_uris, grant_types, require_pkce, first_party, built_in, created_at)
           VALUES ('cli', 'Command line', NULL, '[]', '["device_code"]', true, false, false, $1)`,
          [t0],
        );
        for (const [idHash, createdAt, interactionId] of [
          ['old-1', t0, 'interaction-1'],
          ['old-2', t0 + 1, null],
        ] as const) {
          await pool.query(
            "INSERT INTO sessions (id_hash, user_id, auth_time, amr, created_at, expires_at, interaction_id) VALUES ($1, 'user-alice', $2, 'pwd', $3, $4, $5)",
            [idHash, t0, createdAt, t0 + 3600, interactionId],
          );
        }
        await pool.query(
          `INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri, scope, audience, auth_time, amr, created_at, expires_at)
           VALUES ('old-code', 'cli', 'user-alice', 'http://127.0.0.1/cb', 'openid', 'https://api.example.com', $1, 'pwd', $1, $2)`,
          [t0, t0 + 60],
        );
        await pool.query(
          `INSERT INTO refresh_tokens (id, token_hash, family_id, client_id, user_id, scope, audience, auth_time, amr, created_at, expires_at, family_expires_at)
           VALUES ('old-rt', 'old-rt', 'old-family', 'cli', 'user-alice', 'openid', 'https://api.example.com', $1, 'pwd', $1, $2, $2)`,
          [t0, t0 + 60],
        );
      } finally {
        await pool.end();
      }
      const store = await openStore(schema);
      try {
        expect(store.appliedMigrations).toEqual(migrationNames.filter((name) => Number(name.slice(0, 4)) >= 8));
        const [second, first] = await store.listSessions('user-alice', t0);
        expect(first?.id).toMatch(/^[0-9a-f]{32}$/);
        expect(second?.id).toMatch(/^[0-9a-f]{32}$/);
        expect(first?.id).not.toBe(second?.id);
        expect(await store.findSession('old-1', t0)).toStrictEqual({
          idHash: 'old-1',
          userId: 'user-alice',
          authTime: t0,
          amr: ['pwd'],
          createdAt: t0,
          expiresAt: t0 + 3600,
          interactionId: 'interaction-1',
          id: first?.id,
          ip: undefined,
          userAgent: undefined,
          lastSeenAt: undefined,
        });
        expect((await store.endSessionById(second!.id, 'user-alice'))?.idHash).toBe('old-2');
        expect(await store.findAuthorizationCode('old-code')).toMatchObject({
          amr: ['pwd'],
          approvedIp: undefined,
          approvedUserAgent: undefined,
          sessionId: undefined,
        });
        expect(await store.findRefreshToken('old-rt')).toMatchObject({
          amr: ['pwd'],
          approvedIp: undefined,
          approvedUserAgent: undefined,
          sessionId: undefined,
        });
        expect((await store.listRefreshFamilies('user-alice', t0)).map((f) => [f.familyId, f.approvedIp])).toEqual([['old-family', undefined]]);
      } finally {
        await store.close();
      }
      // An instance of the previous version, still running during a rolling upgrade, inserts no public id.
      const old = new pg.Pool({ connectionString: url, max: 1, options: `-c search_path=${schema}` });
      try {
        await old.query(
          "INSERT INTO sessions (id_hash, user_id, auth_time, amr, created_at, expires_at, interaction_id) VALUES ('from-old-version', 'user-alice', $1, 'pwd', $1, $2, NULL)",
          [t0, t0 + 3600],
        );
        const { rows } = await old.query("SELECT public_id FROM sessions WHERE id_hash = 'from-old-version'");
        expect(rows[0]?.public_id).toMatch(/^[0-9a-f]{32}$/);
      } finally {
        await old.end();
      }
    });

    it('upgrading to roles (0009): users hold no roles, APIs declare no scopes, clients keep their secret and are enabled without keys, and the admin role is there', async () => {
      const schema = freshSchema();
      const pool = new pg.Pool({ connectionString: url, max: 1, options: `-c search_path=${schema}` });
      try {
        const all = readMigrations(postgresMigrationsDir);
        await migrate(
          pool,
          all.filter((m) => m.version < 9),
          t0,
          schema,
        );
        await pool.query(
          "INSERT INTO users (id, username, email, name, password_hash, disabled, created_at) VALUES ('user-alice', 'alice', 'a@example.com', NULL, 'x', false, $1)",
          [t0],
        );
        await pool.query(
          `INSERT INTO clients (client_id, name, secret_hash, redirect_uris, grant_types, require_pkce, first_party, built_in, created_at)
           VALUES ('svc', 'Service', 'sha256-old', '[]', '["authorization_code"]', false, false, false, $1)`,
          [t0],
        );
        await pool.query(`INSERT INTO apis (identifier, name, created_at, introspection_clients) VALUES ('https://api.example.com', 'API', $1, '["svc"]')`, [
          t0,
        ]);
      } finally {
        await pool.end();
      }
      const before = Math.floor(Date.now() / 1000);
      const store = await openStore(schema);
      try {
        expect(store.appliedMigrations).toEqual(migrationNames.filter((name) => Number(name.slice(0, 4)) >= 9));
        expect(await store.findUserById('user-alice')).toMatchObject({ username: 'alice', roles: [] });
        expect(await store.findApi('https://api.example.com')).toStrictEqual({
          identifier: 'https://api.example.com',
          name: 'API',
          createdAt: t0,
          introspectionClients: ['svc'],
          scopes: [],
          managedBy: undefined,
        });
        expect(await store.findClient('svc')).toMatchObject({
          secretHash: 'sha256-old',
          grantTypes: ['authorization_code'],
          jwksUri: undefined,
          jwks: undefined,
          secretSealed: undefined,
          previousSecretHash: undefined,
          previousSecretSealed: undefined,
          previousSecretExpiresAt: undefined,
          disabled: false,
        });
        const admin = await store.findRole('admin');
        expect(admin).toMatchObject({ name: 'admin', description: 'May use the admin console', builtIn: true, permissions: [], members: 0 });
        expect(admin!.createdAt).toBeGreaterThanOrEqual(before - 5);
        expect(admin!.createdAt).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 5);
        expect(await store.grantRole('user-alice', 'admin', t0)).toBe(true);
        expect((await store.findUserById('user-alice'))?.roles).toEqual(['admin']);
        expect(await store.listAuditEvents({ limit: 10 })).toEqual([]);
      } finally {
        await store.close();
      }
    });

    it('upgrading to profile claims (0013): users read no profile and their createdAt as updatedAt; codes and refresh tokens made before read no claims', async () => {
      const schema = freshSchema();
      const pool = new pg.Pool({ connectionString: url, max: 1, options: `-c search_path=${schema}` });
      try {
        const all = readMigrations(postgresMigrationsDir);
        await migrate(
          pool,
          all.filter((m) => m.version < 13),
          t0,
          schema,
        );
        await pool.query(
          "INSERT INTO users (id, username, email, name, password_hash, disabled, created_at) VALUES ('user-alice', 'alice', 'a@example.com', NULL, 'x', false, $1)",
          [t0 - 500],
        );
        await pool.query(
          `INSERT INTO clients (client_id, name, secret_hash, redirect_uris, grant_types, require_pkce, first_party, built_in, created_at)
           VALUES ('cli', 'Command line', NULL, '[]', '["device_code"]', true, false, false, $1)`,
          [t0],
        );
        await pool.query(
          `INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri, scope, audience, auth_time, created_at, expires_at)
           VALUES ('old-code', 'cli', 'user-alice', 'http://127.0.0.1/cb', 'openid', 'https://api.example.com', $1, $1, $2)`,
          [t0, t0 + 60],
        );
        await pool.query(
          `INSERT INTO refresh_tokens (id, token_hash, family_id, client_id, user_id, scope, audience, auth_time, created_at, expires_at, family_expires_at)
           VALUES ('old-rt', 'old-rt', 'old-family', 'cli', 'user-alice', 'openid', 'https://api.example.com', $1, $1, $2, $2)`,
          [t0, t0 + 60],
        );
      } finally {
        await pool.end();
      }
      const store = await openStore(schema);
      try {
        expect(store.appliedMigrations).toEqual(migrationNames.filter((name) => Number(name.slice(0, 4)) >= 13));
        expect(await store.findUserById('user-alice')).toMatchObject({ profile: {}, createdAt: t0 - 500, updatedAt: t0 - 500 });
        expect((await store.findAuthorizationCode('old-code'))?.claims).toBeUndefined();
        expect((await store.findRefreshToken('old-rt'))?.claims).toBeUndefined();
        expect(await store.updateUser('alice', { profile: { nickname: 'Al' } }, t0)).toBe(true);
        expect(await store.findUserById('user-alice')).toMatchObject({ profile: { nickname: 'Al' }, updatedAt: t0 });
      } finally {
        await store.close();
      }
    });

    it('upgrading to factor enrolment links (0017): the one-time links already sent keep working; the purpose check admits enrolment links and nothing else', async () => {
      const schema = freshSchema();
      const pool = new pg.Pool({ connectionString: url, max: 1, options: `-c search_path=${schema}` });
      try {
        const all = readMigrations(postgresMigrationsDir);
        await migrate(
          pool,
          all.filter((m) => m.version < 17),
          t0,
          schema,
        );
        await pool.query(
          "INSERT INTO users (id, username, email, name, password_hash, disabled, created_at, updated_at) VALUES ('user-alice', 'alice', 'a@example.com', NULL, 'x', false, $1, $1)",
          [t0],
        );
        await pool.query(
          "INSERT INTO email_tokens (token_hash, user_id, purpose, email, created_at, expires_at, used_at) VALUES ('reset-1', 'user-alice', 'password_reset', 'a@example.com', $1, $2, NULL)",
          [t0, t0 + 1800],
        );
        await expect(
          pool.query(
            "INSERT INTO email_tokens (token_hash, user_id, purpose, email, created_at, expires_at) VALUES ('e', 'user-alice', 'factor_enrolment', 'a@example.com', 1, 2)",
          ),
        ).rejects.toThrow(/check constraint/);
      } finally {
        await pool.end();
      }
      const store = await openStore(schema);
      const check = new pg.Pool({ connectionString: url, max: 1, options: `-c search_path=${schema}` });
      try {
        expect(store.appliedMigrations).toEqual(migrationNames.filter((name) => Number(name.slice(0, 4)) >= 17));
        expect(await store.useEmailToken('reset-1', 'password_reset', t0 + 1)).toMatchObject({ userId: 'user-alice', usedAt: t0 + 1 });
        await store.createEmailToken({
          tokenHash: 'enrol-1',
          userId: 'user-alice',
          purpose: 'factor_enrolment',
          email: 'a@example.com',
          createdAt: t0,
          expiresAt: t0 + 86400,
          usedAt: undefined,
        });
        expect(await store.useEmailToken('enrol-1', 'factor_enrolment', t0 + 1)).toMatchObject({ purpose: 'factor_enrolment' });
        await expect(
          check.query(
            "INSERT INTO email_tokens (token_hash, user_id, purpose, email, created_at, expires_at) VALUES ('x', 'user-alice', 'anything', 'a@example.com', 1, 2)",
          ),
        ).rejects.toThrow(/check constraint/);
      } finally {
        await check.end();
        await store.close();
      }
    });

    it('a profile or claims column edited by hand into something else reads as no profile / no claims', async () => {
      const schema = freshSchema();
      const store = await openStore(schema);
      const pool = new pg.Pool({ connectionString: url, max: 1, options: `-c search_path=${schema}` });
      try {
        await store.createUser(user());
        await store.createClient(client());
        await store.createAuthorizationCode(authorizationCode({ claims: { userinfo: ['email'], idToken: [] } }));
        await store.createRefreshToken(refreshToken({ claims: { userinfo: ['email'], idToken: [] } }));
        for (const broken of ['not json', '[]', 'null']) {
          await pool.query("UPDATE users SET profile = $1 WHERE id = 'user-alice'", [broken]);
          await pool.query("UPDATE authorization_codes SET claims = $1 WHERE code_hash = 'code-hash-1'", [broken]);
          await pool.query("UPDATE refresh_tokens SET claims = $1 WHERE token_hash = 'refresh-hash-1'", [broken]);
          expect((await store.findUserById('user-alice'))?.profile, broken).toStrictEqual({});
          expect((await store.findAuthorizationCode('code-hash-1'))?.claims, broken).toBeUndefined();
          expect((await store.findRefreshToken('refresh-hash-1'))?.claims, broken).toBeUndefined();
        }
        await pool.query("UPDATE users SET profile = $1 WHERE id = 'user-alice'", [
          JSON.stringify({ nickname: 'Al', given_name: 7, address: { locality: 'Oxford', country: 44 } }),
        ]);
        expect((await store.findUserById('user-alice'))?.profile).toStrictEqual({ nickname: 'Al', address: { locality: 'Oxford' } });
      } finally {
        await pool.end();
        await store.close();
      }
    });

    it('refuses a schema name that would need quoting', async () => {
      await expect(PostgresStore.open({ url: url!, schema: 'Robert"; DROP' })).rejects.toThrow(/invalid schema name/);
    });
  });

  describe('PostgreSQL specifics', () => {
    it('openConfiguredStore opens a PostgresStore for a postgres:// LATCHKEY_DB (schema chosen by the URL)', async () => {
      const schema = freshSchema();
      const admin = new pg.Pool({ connectionString: url, max: 1 });
      await admin.query(`CREATE SCHEMA ${schema}`);
      const withSchema = new URL(url!);
      withSchema.searchParams.set('options', `-c search_path=${schema}`);
      const store = await openConfiguredStore(configFrom({ LATCHKEY_DB: withSchema.toString(), LATCHKEY_SECRET_KEY: 'k'.repeat(43) }));
      try {
        expect(store).toBeInstanceOf(PostgresStore);
        await store.createUser(user());
        const { rows } = await admin.query(`SELECT username FROM ${schema}.users`);
        expect(rows).toEqual([{ username: 'alice' }]);
      } finally {
        await store.close();
        await admin.end();
      }
    });

    it('close() twice is harmless', async () => {
      const store = await openStore();
      await store.close();
      await expect(store.close()).resolves.toBeUndefined();
    });

    it('usernames match regardless of ASCII case only, as SQLite NOCASE does', async () => {
      const store = await openStore();
      try {
        await store.createUser(user({ username: 'kelvin' }));
        expect((await store.findUserByUsername('KELVIN'))?.username).toBe('kelvin');
        // U+212A KELVIN SIGN lower-cases to "k" in Unicode, but is not an ASCII letter.
        expect(await store.findUserByUsername('\u212Aelvin')).toBeUndefined();
        expect(await store.setUserDisabled('\u212Aelvin', true, t0)).toBe(false);
      } finally {
        await store.close();
      }
    });

    it('a lookup by a key holding U+0000 (which PostgreSQL text cannot store) finds nothing instead of failing', async () => {
      const store = await openStore();
      try {
        await store.createClient(client());
        expect(await store.findClient('cli\u0000')).toBeUndefined();
        expect(await store.findUserByUsername('alice\u0000')).toBeUndefined();
        expect(await store.findApi('https://api.example.com\u0000')).toBeUndefined();
        expect(await store.revokeUserTokens('alice\u0000', t0)).toBe(false);
        expect(await store.removeClient('cli\u0000', t0)).toBe(false);
        await store.createUser(user());
        await store.createPasskey(passkey({ id: 'cred' }));
        expect(await store.findPasskey('cred\u0000')).toBeUndefined();
        expect(await store.recordPasskeyUse('cred\u0000', 1, t0)).toBe(false);
        expect(await store.renamePasskey('user-alice', 'cred\u0000', 'x')).toBe(false);
        expect(await store.removePasskey('user-alice', 'cred\u0000')).toBe(false);
        expect(await store.listPasskeys('user-alice\u0000')).toEqual([]);
        expect(await store.findTotp('user-alice\u0000')).toBeUndefined();
        expect(await store.useTotpStep('user-alice\u0000', 1)).toBe(false);
        expect(await store.removeTotp('user-alice\u0000')).toBe(false);
        expect(await store.useRecoveryCode('user-alice', 'code\u0000', t0)).toBe(false);
        expect(await store.countRecoveryCodes('user-alice\u0000')).toBe(0);
        expect(await store.resetSecondFactors('user-alice\u0000')).toBe(false);
        await store.createSession(session());
        await store.createRefreshToken(refreshToken());
        await store.saveConsent(consent());
        expect(await store.listSessions('user-alice\u0000', t0)).toEqual([]);
        expect(await store.endSessionById(`${session().id}\u0000`, undefined)).toBeUndefined();
        expect(await store.endSessionById(session().id, 'user-alice\u0000')).toBeUndefined();
        expect(await store.endOtherSignIns('user-alice\u0000', 'x', t0)).toEqual({ sessions: 0, refreshFamilies: 0 });
        expect(await store.listRefreshFamilies('user-alice\u0000', t0)).toEqual([]);
        expect(await store.revokeRefreshFamilyOf('family-1\u0000', undefined, t0)).toBeUndefined();
        expect(await store.revokeRefreshFamilyOf('family-1', 'user-alice\u0000', t0)).toBeUndefined();
        expect(await store.listConsents('user-alice\u0000')).toEqual([]);
        expect(await store.withdrawConsent('user-alice', 'cli\u0000', t0)).toBe(0);
        expect(await store.updateUserProfile('user-alice\u0000', { name: 'x', email: 'x@example.com' }, t0)).toBe(false);
        expect(await store.updateUser('alice\u0000', { name: 'x' }, t0)).toBe(false);
        expect(await store.updateUserPassword('user-alice\u0000', 'scrypt$x')).toBe(false);
        expect(await store.upgradePasswordHash('user-alice\u0000', user().passwordHash, 'scrypt$x')).toBe(false);
        expect(await store.upgradePasswordHash('user-alice', `${user().passwordHash}\u0000`, 'scrypt$x')).toBe(false);
        expect(await store.useEmailToken('token\u0000', 'password_reset', t0)).toBeUndefined();
        expect(await store.markEmailVerified('user-alice', 'alice@example.com\u0000')).toBe(false);
        expect(await store.countEmailTokens('user-alice\u0000', 'password_reset', 0)).toBe(0);
        expect(await store.findSession(session().idHash, t0)).toStrictEqual(session());
        expect(await store.listRefreshFamilies('user-alice', t0)).toHaveLength(1);
        expect(await store.listConsents('user-alice')).toHaveLength(1);
        expect((await store.findPasskey('cred'))?.name).toBe(passkey().name);
      } finally {
        await store.close();
      }
    });

    it('roles, client grants, one-time keys and the audit log: a key holding U+0000 finds nothing; an audit event keeps what it can', async () => {
      const store = await openStore();
      try {
        await store.createUser(user());
        await store.createClient(client());
        await store.createApi({ identifier: 'https://api.example.com', name: 'API', createdAt: t0, introspectionClients: [], scopes: ['read'] });
        await store.createRole({ name: 'ops', description: undefined, permissions: [{ api: 'https://api.example.com', scope: 'read' }], createdAt: t0 });
        await store.grantRole('user-alice', 'ops', t0);
        await store.saveClientGrant({ clientId: 'cli', api: 'https://api.example.com', scopes: ['read'], createdAt: t0 });
        expect(await store.findRole('ops\u0000')).toBeUndefined();
        expect(await store.updateRole('ops\u0000', { description: 'x' })).toBe(false);
        expect(await store.removeRole('ops\u0000')).toBe(false);
        expect(await store.grantRole('user-alice\u0000', 'ops', t0)).toBe(false);
        expect(await store.grantRole('user-alice', 'ops\u0000', t0)).toBe(false);
        expect(await store.revokeRole('user-alice', 'ops\u0000')).toBe(false);
        expect(await store.listRoleMembers('ops\u0000')).toEqual([]);
        expect(await store.permittedScopes('user-alice', 'https://api.example.com\u0000')).toEqual([]);
        expect(await store.findClientGrant('cli\u0000', 'https://api.example.com')).toBeUndefined();
        expect(await store.listClientGrants('cli\u0000')).toEqual([]);
        expect(await store.removeClientGrant('cli', 'https://api.example.com\u0000')).toBe(false);
        expect(await store.removeApi('https://api.example.com\u0000')).toBe(false);
        expect(await store.updateClient('cli\u0000', { name: 'x' })).toBe(false);
        expect(await store.rotateClientSecret('cli\u0000', { hash: 'h', sealed: 's' }, undefined)).toBe(false);
        expect(await store.setClientDisabled('cli\u0000', true)).toBe(false);
        // A jti PostgreSQL cannot store is nobody's honest one: refused, as a replay is.
        expect(await store.useOnce('client_assertion', 'jti\u0000', t0)).toBe(false);
        await store.appendAuditEvents([
          {
            at: 1,
            event: 'user.login_failed',
            actor: undefined,
            userId: 'user\u0000x',
            clientId: undefined,
            ip: '203.0.113.9',
            details: { username: 'a\u0000b' },
          },
        ]);
        expect(await store.listAuditEvents({ limit: 10 })).toMatchObject([{ userId: 'user\uFFFDx', details: { username: 'a\u0000b' } }]);
        expect(await store.listAuditEvents({ limit: 10, userId: 'user\u0000x' })).toEqual([]);
        expect(await store.permittedScopes('user-alice', 'https://api.example.com')).toEqual(['read']);
        expect(await store.findClientGrant('cli', 'https://api.example.com')).toBeDefined();
      } finally {
        await store.close();
      }
    });

    it('lists in byte order whatever the database locale (as SQLite sorts)', async () => {
      const store = await openStore();
      try {
        for (const clientId of ['b', 'B', 'a_b', 'a-b', 'ab', 'A']) await store.createClient(client({ clientId }));
        expect((await store.listClients()).map((c) => c.clientId)).toEqual(['A', 'B', 'a-b', 'a_b', 'ab', 'b']);
        for (const username of ['b.x', 'B_y', 'a', 'Ab']) await store.createUser(user({ username }));
        expect((await store.listUsers()).map((u) => u.username)).toEqual(['a', 'Ab', 'b.x', 'B_y']);
      } finally {
        await store.close();
      }
    });
  });
});
