/**
 * One conformance suite for every Store (habit 7; dex storage/conformance). `storeConformance`
 * speaks only the Store interface, so a PostgreSQL store runs the very same cases by calling it
 * from its own test file. Each test opens its own store through `makeStore` and closes it.
 * This module registers nothing by itself: importing it does not run the SQLite cases.
 */
import { assertionReplayKey } from '../../src/oauth/client_assertion.js';
import { describe, it, expect } from 'vitest';
import {
  DuplicateError,
  MissingReferenceError,
  type AuditEventQuery,
  type AuditEventRecord,
  type AuthorizationCodeRecord,
  type ClientChanges,
  type ClientGrantRecord,
  type ClientRecord,
  type ConfigurationChange,
  type ConnectorRecord,
  type DeviceGrantRecord,
  type Permission,
  type PushedRequestRecord,
  type RefreshFamilySummary,
  type RegistrationTokenRecord,
  type RequestedClaims,
  type Store,
  type UserIdentityRecord,
  type UserProfileClaims,
} from '../../src/store/store.js';
import {
  api,
  authorizationCode,
  client,
  consent,
  deviceGrant,
  emailToken,
  passkey,
  refreshToken,
  session,
  signingKey,
  t0,
  totp,
  user,
} from '../helpers/records.js';

export { t0, user };

// ─── The suite ──────────────────────────────────────────────────────────────────────────────

export function storeConformance(name: string, makeStore: () => Promise<Store>): void {
  /** Opens a fresh store for one test and always closes it. */
  async function withStore(fn: (store: Store) => Promise<void>): Promise<void> {
    const store = await makeStore();
    try {
      await fn(store);
    } finally {
      await store.close();
    }
  }

  /** A store holding user alice and public client cli, which device grants and tokens refer to. */
  async function withSeededStore(fn: (store: Store) => Promise<void>): Promise<void> {
    await withStore(async (store) => {
      await store.createUser(user());
      await store.createClient(client());
      await fn(store);
    });
  }

  /** Device grants no one can spend: 'pending', 'denied', and 'expired' (approved, expiring at t0 + 900). */
  async function createUnspendableGrants(store: Store): Promise<void> {
    await store.createDeviceGrant(deviceGrant({ id: 'pending' }));
    await store.createDeviceGrant(deviceGrant({ id: 'denied' }));
    await store.createDeviceGrant(deviceGrant({ id: 'expired', expiresAt: t0 + 900 }));
    expect(await store.denyDeviceGrant('denied', t0 + 10)).toBe(true);
    expect(await store.approveDeviceGrant('expired', 'user-alice', t0, ['pwd'], t0 + 10)).toBe(true);
  }

  describe(`Store conformance: ${name}`, () => {
    it('ping', async () => {
      await withStore(async (store) => {
        expect(await store.ping()).toBe(true);
      });
    });

    it('writesAccepted: true while no write met a storage fault; after one, a write probe decides and leaves no row behind', async () => {
      await withStore(async (store) => {
        expect(await store.writesAccepted()).toBe(true);
        // What the store is told when a statement fails for want of space (SQLite's code: the rule is the same for both).
        (store as unknown as { noteFailure(err: unknown): void }).noteFailure(Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }));
        // The probe commits on a healthy database: writes are taken again.
        expect(await store.writesAccepted()).toBe(true);
        expect(await store.writesAccepted()).toBe(true);
      });
    });

    it("databaseTime is the database's clock, in whole epoch seconds", async () => {
      await withStore(async (store) => {
        const time = await store.databaseTime();
        expect(Number.isInteger(time)).toBe(true);
        expect(Math.abs(time - Date.now() / 1000)).toBeLessThan(5);
      });
    });

    describe('users', () => {
      it('creates and finds a user by id and by username, with every field intact', async () => {
        await withStore(async (store) => {
          const alice = user();
          await store.createUser(alice);
          expect(await store.findUserById('user-alice')).toEqual(alice);
          expect(await store.findUserByUsername('alice')).toEqual(alice);
        });
      });

      it('keeps an absent name absent and a disabled flag set', async () => {
        await withStore(async (store) => {
          const bob = user({ username: 'bob', name: undefined, disabled: true });
          await store.createUser(bob);
          const found = await store.findUserById('user-bob');
          expect(found).toEqual(bob);
          expect(found?.name).toBeUndefined();
          expect(found?.disabled).toBe(true);
        });
      });

      it('returns undefined for an unknown user', async () => {
        await withStore(async (store) => {
          await store.createUser(user());
          expect(await store.findUserById('nobody')).toBeUndefined();
          expect(await store.findUserByUsername('nobody')).toBeUndefined();
        });
      });

      it('refuses a username that differs only in case with DuplicateError', async () => {
        await withStore(async (store) => {
          await store.createUser(user({ username: 'alice' }));
          const dup = store.createUser(user({ id: 'user-2', username: 'ALICE' }));
          await expect(dup).rejects.toBeInstanceOf(DuplicateError);
          await expect(store.createUser(user({ id: 'user-3', username: 'alice' }))).rejects.toBeInstanceOf(DuplicateError);
          expect(await store.countUsers()).toBe(1);
          expect(await store.findUserById('user-2')).toBeUndefined();
        });
      });

      it('counts and lists users sorted by username', async () => {
        await withStore(async (store) => {
          expect(await store.countUsers()).toBe(0);
          expect(await store.listUsers()).toEqual([]);
          for (const username of ['carol', 'alice', 'bob']) await store.createUser(user({ username }));
          expect(await store.countUsers()).toBe(3);
          expect((await store.listUsers()).map((u) => u.username)).toEqual(['alice', 'bob', 'carol']);
          expect((await store.listUsers())[1]).toEqual(user({ username: 'bob' }));
        });
      });

      it('disables and re-enables a user; false for an unknown user', async () => {
        await withStore(async (store) => {
          await store.createUser(user());
          expect(await store.setUserDisabled('alice', true, t0)).toBe(true);
          expect((await store.findUserById('user-alice'))?.disabled).toBe(true);
          expect(await store.setUserDisabled('alice', false, t0)).toBe(true);
          expect((await store.findUserById('user-alice'))?.disabled).toBe(false);
          expect(await store.setUserDisabled('nobody', true, t0)).toBe(false);
          expect(await store.countUsers()).toBe(1);
        });
      });

      it("disabling a user deletes that user's sessions and no one else's", async () => {
        await withStore(async (store) => {
          await store.createUser(user({ username: 'alice' }));
          await store.createUser(user({ username: 'bob' }));
          await store.createSession(session({ idHash: 'a1', userId: 'user-alice' }));
          await store.createSession(session({ idHash: 'a2', userId: 'user-alice' }));
          await store.createSession(session({ idHash: 'b1', userId: 'user-bob' }));
          expect(await store.setUserDisabled('alice', true, t0)).toBe(true);
          expect(await store.findSession('a1', t0)).toBeUndefined();
          expect(await store.findSession('a2', t0)).toBeUndefined();
          expect(await store.findSession('b1', t0)).toEqual(session({ idHash: 'b1', userId: 'user-bob' }));
        });
      });

      it('re-enabling a user does not touch sessions', async () => {
        await withStore(async (store) => {
          await store.createUser(user());
          await store.createSession(session());
          expect(await store.setUserDisabled('alice', false, t0)).toBe(true);
          expect(await store.findSession('session-hash-1', t0)).toEqual(session());
          expect((await store.findUserById('user-alice'))?.tokensRevokedAt).toBeUndefined();
        });
      });

      it('sets a password hash; false for an unknown user', async () => {
        await withStore(async (store) => {
          await store.createUser(user({ username: 'alice' }));
          await store.createUser(user({ username: 'bob' }));
          expect(await store.setUserPassword('alice', 'scrypt$new', t0)).toBe(true);
          expect((await store.findUserById('user-alice'))?.passwordHash).toBe('scrypt$new');
          expect((await store.findUserById('user-bob'))?.passwordHash).toBe('scrypt$32768$8$1$salt$hash');
          expect(await store.setUserPassword('nobody', 'scrypt$x', t0)).toBe(false);
        });
      });

      it("a new password ends that user's sessions only", async () => {
        await withStore(async (store) => {
          await store.createUser(user({ username: 'alice' }));
          await store.createUser(user({ username: 'bob' }));
          await store.createSession(session({ idHash: 'alice-session', userId: 'user-alice' }));
          await store.createSession(session({ idHash: 'bob-session', userId: 'user-bob' }));
          expect(await store.setUserPassword('alice', 'scrypt$new', t0)).toBe(true);
          expect(await store.findSession('alice-session', t0)).toBeUndefined();
          expect(await store.findSession('bob-session', t0)).toBeDefined();
        });
      });

      // revokeUserTokens, a new password and disabling all end the same things (RFC 6819 §5.2.2.3).
      const endings: Array<[string, (store: Store, now: number) => Promise<boolean>]> = [
        ['revokeUserTokens', (store, now) => store.revokeUserTokens('ALICE', now)],
        ['setUserPassword', (store, now) => store.setUserPassword('alice', 'scrypt$new', now)],
        ['setUserDisabled', (store, now) => store.setUserDisabled('alice', true, now)],
      ];
      for (const [verb, end] of endings) {
        it(`${verb} ends the user's sessions and refresh families and marks when, and leaves other users alone`, async () => {
          await withSeededStore(async (store) => {
            await store.createUser(user({ username: 'bob' }));
            await store.createSession(session({ idHash: 'alice-session' }));
            await store.createSession(session({ idHash: 'bob-session', userId: 'user-bob' }));
            await store.createRefreshToken(refreshToken({ id: 'a1', tokenHash: 'a1', familyId: 'fam-a' }));
            await store.createRefreshToken(refreshToken({ id: 'a2', tokenHash: 'a2', familyId: 'fam-b' }));
            await store.createRefreshToken(refreshToken({ id: 'b1', tokenHash: 'b1', familyId: 'fam-bob', userId: 'user-bob' }));
            expect(await end(store, t0 + 5)).toBe(true);
            expect((await store.findUserById('user-alice'))?.tokensRevokedAt).toBe(t0 + 5);
            expect(await store.findSession('alice-session', t0)).toBeUndefined();
            expect((await store.findRefreshToken('a1'))?.revokedAt).toBe(t0 + 5);
            expect((await store.findRefreshToken('a2'))?.revokedAt).toBe(t0 + 5);
            expect(await store.isRefreshFamilyRevoked('fam-a')).toBe(true);
            expect(await store.isRefreshFamilyRevoked('fam-b')).toBe(true);
            // A token that joins a revoked family later (a rotation racing this) is born revoked.
            await store.createRefreshToken(refreshToken({ id: 'a3', tokenHash: 'a3', familyId: 'fam-a' }));
            expect((await store.findRefreshToken('a3'))?.revokedAt).toBe(t0 + 5);
            expect(await store.findSession('bob-session', t0)).toBeDefined();
            expect((await store.findRefreshToken('b1'))?.revokedAt).toBeUndefined();
            expect(await store.isRefreshFamilyRevoked('fam-bob')).toBe(false);
            expect((await store.findUserById('user-bob'))?.tokensRevokedAt).toBeUndefined();
          });
        });
      }

      it('revokeUserTokens never moves the mark back, and is false for an unknown user', async () => {
        await withSeededStore(async (store) => {
          expect(await store.revokeUserTokens('alice', t0 + 10)).toBe(true);
          expect(await store.revokeUserTokens('alice', t0 + 3)).toBe(true);
          expect((await store.findUserById('user-alice'))?.tokensRevokedAt).toBe(t0 + 10);
          expect(await store.revokeUserTokens('nobody', t0)).toBe(false);
          expect(await store.revokeUserTokens('\u0000', t0)).toBe(false);
        });
      });

      it('keeps tokensRevokedAt given at creation', async () => {
        await withStore(async (store) => {
          await store.createUser(user({ tokensRevokedAt: t0 - 1 }));
          expect((await store.findUserById('user-alice'))?.tokensRevokedAt).toBe(t0 - 1);
        });
      });
    });

    describe('clients', () => {
      it('creates and finds a public client with every field intact', async () => {
        await withStore(async (store) => {
          const cli = client({ redirectUris: ['http://127.0.0.1/cb', 'com.example.app:/cb'], firstParty: true, builtIn: true });
          await store.createClient(cli);
          const found = await store.findClient('cli');
          expect(found).toEqual(cli);
          expect(found?.secretHash).toBeUndefined();
        });
      });

      it('keeps a confidential client secret hash and its flags', async () => {
        await withStore(async (store) => {
          const svc = client({ clientId: 'svc', secretHash: 'sha256-of-secret', grantTypes: ['authorization_code'], requirePkce: false });
          await store.createClient(svc);
          expect(await store.findClient('svc')).toEqual(svc);
        });
      });

      it('refuses a duplicate client_id with DuplicateError and keeps the first', async () => {
        await withStore(async (store) => {
          await store.createClient(client({ name: 'First' }));
          await expect(store.createClient(client({ name: 'Second' }))).rejects.toBeInstanceOf(DuplicateError);
          expect((await store.findClient('cli'))?.name).toBe('First');
        });
      });

      it('ensureClient inserts a missing client and never overwrites an existing one', async () => {
        await withStore(async (store) => {
          await store.ensureClient(client({ name: 'Built in', builtIn: true }));
          expect(await store.findClient('cli')).toEqual(client({ name: 'Built in', builtIn: true }));
          await store.ensureClient(client({ name: 'Changed', grantTypes: ['authorization_code'], builtIn: true }));
          expect(await store.findClient('cli')).toEqual(client({ name: 'Built in', builtIn: true }));
          expect(await store.listClients()).toHaveLength(1);
        });
      });

      it('lists clients sorted by client_id; undefined for an unknown one', async () => {
        await withStore(async (store) => {
          expect(await store.listClients()).toEqual([]);
          for (const clientId of ['zeta', 'alpha', 'mid']) await store.createClient(client({ clientId }));
          expect((await store.listClients()).map((c) => c.clientId)).toEqual(['alpha', 'mid', 'zeta']);
          expect(await store.findClient('nope')).toBeUndefined();
        });
      });

      it('removes a client: true once, then false', async () => {
        await withStore(async (store) => {
          await store.createClient(client({ clientId: 'a' }));
          await store.createClient(client({ clientId: 'b' }));
          expect(await store.removeClient('a', t0)).toBe(true);
          expect(await store.findClient('a')).toBeUndefined();
          expect(await store.removeClient('a', t0)).toBe(false);
          expect(await store.removeClient('never', t0)).toBe(false);
          expect((await store.listClients()).map((c) => c.clientId)).toEqual(['b']);
        });
      });

      it('a client registered again under a removed id carries the removal time; others do not', async () => {
        await withStore(async (store) => {
          await store.createClient(client({ clientId: 'a' }));
          expect(await store.removeClient('a', t0 + 7)).toBe(true);
          await store.createClient(client({ clientId: 'a', createdAt: t0 + 8 }));
          expect(await store.findClient('a')).toEqual(client({ clientId: 'a', createdAt: t0 + 8, tokensRevokedAt: t0 + 7 }));
          await store.ensureClient(client({ clientId: 'fresh' }));
          expect((await store.findClient('fresh'))?.tokensRevokedAt).toBeUndefined();
          // Removed again later: the newer time counts.
          expect(await store.removeClient('a', t0 + 20)).toBe(true);
          await store.ensureClient(client({ clientId: 'a' }));
          expect((await store.findClient('a'))?.tokensRevokedAt).toBe(t0 + 20);
        });
      });

      it("removing a client removes its device grants and refresh tokens, not other clients'", async () => {
        await withSeededStore(async (store) => {
          await store.createClient(client({ clientId: 'other' }));
          await store.createDeviceGrant(deviceGrant({ id: 'mine' }));
          await store.createDeviceGrant(deviceGrant({ id: 'theirs', clientId: 'other' }));
          await store.createRefreshToken(refreshToken({ id: 'rt-mine', tokenHash: 'rt-mine' }));
          await store.createRefreshToken(refreshToken({ id: 'rt-theirs', tokenHash: 'rt-theirs', clientId: 'other' }));
          expect(await store.removeClient('cli', t0)).toBe(true);
          expect(await store.findDeviceGrantByDeviceCode('device-mine')).toBeUndefined();
          expect(await store.findDeviceGrantByUserCode('user-mine')).toBeUndefined();
          expect(await store.findRefreshToken('rt-mine')).toBeUndefined();
          expect(await store.findDeviceGrantByDeviceCode('device-theirs')).toEqual(deviceGrant({ id: 'theirs', clientId: 'other' }));
          expect(await store.findRefreshToken('rt-theirs')).toEqual(refreshToken({ id: 'rt-theirs', tokenHash: 'rt-theirs', clientId: 'other' }));
        });
      });
    });

    describe('connectors and upstream identities', () => {
      const connector = (id: string, extra: Partial<Omit<ConnectorRecord, 'position'>> = {}): Omit<ConnectorRecord, 'position'> => ({
        managedBy: undefined,
        id,
        type: 'oidc',
        name: `Connector ${id}`,
        config: { issuer: 'https://sso.example.com', clientId: 'latchkey', groupsClaim: 'groups', trustEmail: false },
        secret: 'lk1.sealed',
        createdAt: t0,
        ...extra,
      });
      const identity = (extra: Partial<UserIdentityRecord> = {}): UserIdentityRecord => ({
        connectorId: 'sso',
        subject: 'up-1',
        userId: 'user-alice',
        createdAt: t0,
        lastSignInAt: t0,
        ...extra,
      });

      it('creates, lists in the order added, finds and removes connectors, with every field intact', async () => {
        await withStore(async (store) => {
          await store.createConnector(connector('zeta'));
          await store.createConnector(connector('alpha', { type: 'ldap', config: { url: 'ldap://h:389' }, secret: undefined }));
          const all = await store.listConnectors();
          expect(all.map((c) => [c.id, c.position])).toEqual([
            ['zeta', 1],
            ['alpha', 2],
          ]);
          expect(await store.findConnector('zeta')).toEqual({ ...connector('zeta'), position: 1 });
          expect((await store.findConnector('alpha'))?.secret).toBeUndefined();
          await expect(store.createConnector(connector('zeta'))).rejects.toBeInstanceOf(DuplicateError);
          expect(await store.removeConnector('zeta')).toBe(true);
          expect(await store.removeConnector('zeta')).toBe(false);
          expect(await store.findConnector('zeta')).toBeUndefined();
          expect((await store.listConnectors()).map((c) => c.id)).toEqual(['alpha']);
        });
      });

      it('a new user with its identity in one step; a taken username or identity creates nothing', async () => {
        await withStore(async (store) => {
          await store.createConnector(connector('sso'));
          const pat = user({ username: 'pat', source: 'sso', emailVerified: false, groups: ['staff'] });
          await store.createUserWithIdentity(pat, identity({ userId: pat.id }));
          expect(await store.findUserById(pat.id)).toEqual(pat);
          expect(await store.findIdentity('sso', 'up-1')).toEqual(identity({ userId: pat.id }));
          const clash = user({ username: 'PAT', id: 'user-other' });
          await expect(store.createUserWithIdentity(clash, identity({ subject: 'up-2', userId: clash.id }))).rejects.toThrow(DuplicateError);
          expect(await store.findIdentity('sso', 'up-2')).toBeUndefined();
          const again = user({ username: 'pat2', id: 'user-pat2' });
          await expect(store.createUserWithIdentity(again, identity({ userId: again.id }))).rejects.toThrow(DuplicateError);
          expect(await store.findUserById('user-pat2')).toBeUndefined();
        });
      });

      it('links an identity to an existing user once; removing the connector forgets its identities, not the users', async () => {
        await withSeededStore(async (store) => {
          await store.createConnector(connector('sso'));
          await store.linkIdentity(identity());
          await expect(store.linkIdentity(identity({ userId: 'user-alice' }))).rejects.toBeInstanceOf(DuplicateError);
          expect(await store.removeConnector('sso')).toBe(true);
          expect(await store.findIdentity('sso', 'up-1')).toBeUndefined();
          expect(await store.findUserById('user-alice')).toBeDefined();
        });
      });

      it('removeUser ends what the person holds and removes them with their identities, grants and sessions; others stay', async () => {
        await withSeededStore(async (store) => {
          await store.createConnector(connector('sso'));
          await store.linkIdentity(identity());
          await store.createUser(user({ username: 'bob' }));
          await store.createRole({ name: 'editor', description: undefined, permissions: [], createdAt: t0 });
          expect(await store.grantRole('user-alice', 'editor', t0)).toBe(true);
          expect(await store.grantRole('user-bob', 'editor', t0)).toBe(true);
          await store.createSession(session({ idHash: 'alice-session' }));
          await store.createSession(session({ idHash: 'bob-session', userId: 'user-bob' }));
          await store.createRefreshToken(refreshToken({ id: 'a1', tokenHash: 'a1', familyId: 'fam-a' }));
          const removed = await store.removeUser('ALICE', t0 + 5);
          expect(removed?.id).toBe('user-alice');
          expect(removed?.roles).toEqual(['editor']);
          expect(await store.findUserById('user-alice')).toBeUndefined();
          expect(await store.findUserByUsername('alice')).toBeUndefined();
          expect(await store.findIdentity('sso', 'up-1')).toBeUndefined();
          expect(await store.findSession('alice-session', t0)).toBeUndefined();
          expect(await store.findRefreshToken('a1')).toBeUndefined();
          expect((await store.listRoleMembers('editor')).map((u) => u.username)).toEqual(['bob']);
          expect(await store.findSession('bob-session', t0)).toBeDefined();
          expect(await store.removeUser('alice', t0 + 6)).toBeUndefined();
          expect(await store.removeUser('\u0000', t0)).toBeUndefined();
          expect((await store.listUsers()).map((u) => u.username)).toEqual(['bob']);
        });
      });

      it('recordUpstreamSignIn refreshes the groups always and the profile only as given', async () => {
        await withSeededStore(async (store) => {
          await store.createConnector(connector('sso'));
          await store.linkIdentity(identity());
          await store.recordUpstreamSignIn('sso', 'up-1', t0 + 9, { groups: ['a', 'b'] });
          expect(await store.findUserById('user-alice')).toEqual({ ...user(), groups: ['a', 'b'] });
          expect((await store.findIdentity('sso', 'up-1'))?.lastSignInAt).toBe(t0 + 9);
          await store.recordUpstreamSignIn('sso', 'up-1', t0 + 10, { groups: [], email: 'new@example.com', emailVerified: false, name: undefined });
          expect(await store.findUserById('user-alice')).toEqual({
            ...user(),
            groups: [],
            email: 'new@example.com',
            emailVerified: false,
            name: undefined,
            updatedAt: t0 + 10,
          });
          await store.recordUpstreamSignIn('sso', 'nobody', t0, { groups: ['x'] }); // unknown identity: nothing happens
          expect((await store.findUserById('user-alice'))?.groups).toEqual([]);
          // updated_at moves only when the name or the email really changes (groups are not part of it).
          await store.recordUpstreamSignIn('sso', 'up-1', t0 + 20, { groups: ['c'], email: 'new@example.com', name: undefined });
          expect(await store.findUserById('user-alice')).toMatchObject({ groups: ['c'], updatedAt: t0 + 10 });
          await store.recordUpstreamSignIn('sso', 'up-1', t0 + 30, { groups: ['c'], name: 'Alice Upstream' });
          expect(await store.findUserById('user-alice')).toMatchObject({ name: 'Alice Upstream', email: 'new@example.com', updatedAt: t0 + 30 });
          await store.recordUpstreamSignIn('sso', 'up-1', t0 + 40, { groups: ['c'], email: 'NEW@example.com' });
          expect(await store.findUserById('user-alice')).toMatchObject({ name: 'Alice Upstream', email: 'NEW@example.com', updatedAt: t0 + 40 });
        });
      });

      it("listIdentities: one user's identities oldest first, or everyone's", async () => {
        await withSeededStore(async (store) => {
          await store.createUser(user({ username: 'bob' }));
          await store.createConnector(connector('sso'));
          await store.createConnector(connector('gh', { type: 'github' }));
          expect(await store.listIdentities('user-alice')).toEqual([]);
          await store.linkIdentity(identity({ connectorId: 'gh', subject: '42', createdAt: t0 + 5 }));
          await store.linkIdentity(identity({ createdAt: t0 + 1, lastSignInAt: undefined }));
          await store.linkIdentity(identity({ subject: 'up-bob', userId: 'user-bob', createdAt: t0 + 3 }));
          expect(await store.listIdentities('user-alice')).toEqual([
            identity({ createdAt: t0 + 1, lastSignInAt: undefined }),
            identity({ connectorId: 'gh', subject: '42', createdAt: t0 + 5 }),
          ]);
          expect((await store.listIdentities(undefined)).map((i) => [i.userId, i.connectorId, i.subject])).toEqual([
            ['user-alice', 'sso', 'up-1'],
            ['user-bob', 'sso', 'up-bob'],
            ['user-alice', 'gh', '42'],
          ]);
          expect(await store.listIdentities('nobody')).toEqual([]);
        });
      });

      it("unlinkIdentity removes the user's identities of that connector, remembers each as removed, and ends everything the user holds, in one step", async () => {
        await withSeededStore(async (store) => {
          await store.createUser(user({ username: 'bob' }));
          await store.createConnector(connector('sso'));
          await store.createConnector(connector('gh', { type: 'github' }));
          // Two upstream accounts of one connector linked to alice (the same verified email), one of another connector, and bob's.
          await store.linkIdentity(identity());
          await store.linkIdentity(identity({ subject: 'up-2', createdAt: t0 + 2 }));
          await store.linkIdentity(identity({ connectorId: 'gh', subject: '42' }));
          await store.linkIdentity(identity({ subject: 'up-bob', userId: 'user-bob' }));
          await store.createSession(session({ amr: ['fed'] }));
          await store.createSession(session({ idHash: 'bob-session', userId: 'user-bob' }));
          await store.createRefreshToken(refreshToken({ amr: ['fed'] }));
          // Someone else's identity, or an unknown connector: nothing happens.
          expect(await store.unlinkIdentity('user-alice', 'nope', t0 + 9)).toEqual([]);
          expect(await store.unlinkIdentity('user-bob', 'gh', t0 + 9)).toEqual([]);
          expect(await store.unlinkIdentity('nobody', 'sso', t0 + 9)).toEqual([]);
          expect(await store.findSession('session-hash-1', t0 + 9)).toBeDefined();
          expect((await store.findUserById('user-alice'))?.tokensRevokedAt).toBeUndefined();

          expect(await store.unlinkIdentity('user-alice', 'sso', t0 + 10)).toEqual([identity(), identity({ subject: 'up-2', createdAt: t0 + 2 })]);
          expect(await store.findIdentity('sso', 'up-1')).toBeUndefined();
          expect(await store.findIdentity('sso', 'up-2')).toBeUndefined();
          expect((await store.listIdentities('user-alice')).map((i) => i.connectorId)).toEqual(['gh']);
          expect(await store.findIdentity('sso', 'up-bob')).toBeDefined();
          expect(await store.findRemovedIdentity('sso', 'up-1')).toEqual({
            connectorId: 'sso',
            subject: 'up-1',
            userId: 'user-alice',
            linkedAt: t0,
            removedAt: t0 + 10,
          });
          expect(await store.findRemovedIdentity('sso', 'up-bob')).toBeUndefined();
          expect((await store.listRemovedIdentities('user-alice')).map((r) => r.subject)).toEqual(['up-1', 'up-2']);
          expect(await store.listRemovedIdentities('user-bob')).toEqual([]);
          // Whoever signed in through it is signed out, as revokeUserTokens does; bob keeps his.
          expect(await store.findSession('session-hash-1', t0 + 10)).toBeUndefined();
          expect((await store.findRefreshToken('refresh-hash-1'))?.revokedAt).toBe(t0 + 10);
          expect(await store.isRefreshFamilyRevoked('family-1')).toBe(true);
          expect((await store.findUserById('user-alice'))?.tokensRevokedAt).toBe(t0 + 10);
          expect(await store.findSession('bob-session', t0 + 10)).toBeDefined();
          expect((await store.findUserById('user-bob'))?.tokensRevokedAt).toBeUndefined();
          // Done once: a second removal finds nothing.
          expect(await store.unlinkIdentity('user-alice', 'sso', t0 + 11)).toEqual([]);
          // A sign-in through a removed identity records nothing and says so.
          expect(await store.recordUpstreamSignIn('sso', 'up-1', t0 + 12, { groups: ['x'] })).toBe(false);
          expect(await store.recordUpstreamSignIn('gh', '42', t0 + 12, { groups: ['x'] })).toBe(true);
        });
      });

      it('unlinkIdentity with anotherWayIn keeps the last way in: a password here, an identity at another connector, or a passkey where passkeys sign in', async () => {
        await withStore(async (store) => {
          await store.createConnector(connector('sso'));
          await store.createConnector(connector('gh', { type: 'github' }));
          // A user the upstream made: no password.
          await store.createUserWithIdentity(user({ username: 'pat', passwordHash: 'upstream', source: 'sso' }), identity({ userId: 'user-pat' }));
          await store.createSession(session({ userId: 'user-pat', amr: ['fed'] }));
          expect(await store.unlinkIdentity('user-pat', 'sso', t0 + 1, { passkeysSignIn: true })).toBe('last_way_in');
          expect(await store.findIdentity('sso', 'up-1')).toBeDefined();
          expect(await store.findRemovedIdentity('sso', 'up-1')).toBeUndefined();
          expect(await store.findSession('session-hash-1', t0 + 1)).toBeDefined();
          // A passkey counts only where a passkey signs in on its own.
          await store.createPasskey(passkey({ userId: 'user-pat' }));
          expect(await store.unlinkIdentity('user-pat', 'sso', t0 + 1, { passkeysSignIn: false })).toBe('last_way_in');
          expect(await store.unlinkIdentity('user-pat', 'sso', t0 + 2, { passkeysSignIn: true })).toEqual([identity({ userId: 'user-pat' })]);

          // Another connector's identity.
          await store.createUserWithIdentity(
            user({ username: 'quinn', passwordHash: 'upstream', source: 'sso' }),
            identity({ subject: 'q', userId: 'user-quinn' }),
          );
          await store.linkIdentity(identity({ connectorId: 'gh', subject: 'q-gh', userId: 'user-quinn' }));
          expect(await store.unlinkIdentity('user-quinn', 'sso', t0 + 3, { passkeysSignIn: false })).toHaveLength(1);
          expect(await store.unlinkIdentity('user-quinn', 'gh', t0 + 4, { passkeysSignIn: true })).toBe('last_way_in');
          // An operator's removal (no guard) may take the last one.
          expect(await store.unlinkIdentity('user-quinn', 'gh', t0 + 5)).toHaveLength(1);
          expect(await store.listIdentities('user-quinn')).toEqual([]);

          // A password here: scrypt (earlier versions) or Argon2id.
          await store.createUser(user({ username: 'rita' }));
          await store.linkIdentity(identity({ subject: 'r', userId: 'user-rita' }));
          expect(await store.unlinkIdentity('user-rita', 'sso', t0 + 6, { passkeysSignIn: false })).toHaveLength(1);
          await store.createUser(
            user({ username: 'sam', passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g' }),
          );
          await store.linkIdentity(identity({ subject: 's', userId: 'user-sam' }));
          expect(await store.unlinkIdentity('user-sam', 'sso', t0 + 7, { passkeysSignIn: false })).toHaveLength(1);
        });
      });

      it('two removals at once with anotherWayIn cannot both take the last way in', async () => {
        await withStore(async (store) => {
          await store.createConnector(connector('sso'));
          await store.createConnector(connector('gh', { type: 'github' }));
          await store.createUserWithIdentity(user({ username: 'pat', passwordHash: 'upstream', source: 'sso' }), identity({ userId: 'user-pat' }));
          await store.linkIdentity(identity({ connectorId: 'gh', subject: 'p-gh', userId: 'user-pat' }));
          const results = await Promise.all([
            store.unlinkIdentity('user-pat', 'sso', t0 + 1, { passkeysSignIn: false }),
            store.unlinkIdentity('user-pat', 'gh', t0 + 1, { passkeysSignIn: false }),
          ]);
          expect(results.filter((r) => r === 'last_way_in')).toHaveLength(1);
          expect(await store.listIdentities('user-pat')).toHaveLength(1);
        });
      });

      it('allowRemovedIdentity forgets the removals of that connector (then it may be linked again); removing the connector forgets them too', async () => {
        await withSeededStore(async (store) => {
          await store.createConnector(connector('sso'));
          await store.createConnector(connector('gh', { type: 'github' }));
          await store.linkIdentity(identity());
          await store.linkIdentity(identity({ connectorId: 'gh', subject: '42' }));
          await store.unlinkIdentity('user-alice', 'sso', t0 + 1);
          await store.unlinkIdentity('user-alice', 'gh', t0 + 2);
          expect((await store.listRemovedIdentities('user-alice')).map((r) => [r.connectorId, r.removedAt])).toEqual([
            ['gh', t0 + 2],
            ['sso', t0 + 1],
          ]);
          expect(await store.allowRemovedIdentity('user-bob', 'sso')).toBe(0);
          expect(await store.allowRemovedIdentity('user-alice', 'sso')).toBe(1);
          expect(await store.allowRemovedIdentity('user-alice', 'sso')).toBe(0);
          expect(await store.findRemovedIdentity('sso', 'up-1')).toBeUndefined();
          await store.linkIdentity(identity({ createdAt: t0 + 3 }));
          expect((await store.findIdentity('sso', 'up-1'))?.createdAt).toBe(t0 + 3);
          expect(await store.removeConnector('gh')).toBe(true);
          expect(await store.findRemovedIdentity('gh', '42')).toBeUndefined();
          expect(await store.listRemovedIdentities('user-alice')).toEqual([]);
        });
      });

      it('findUsersByEmail ignores ASCII case', async () => {
        await withStore(async (store) => {
          await store.createUser(user({ username: 'a', id: 'a', email: 'Same@Example.com' }));
          await store.createUser(user({ username: 'b', id: 'b', email: 'same@example.COM' }));
          await store.createUser(user({ username: 'c', id: 'c', email: 'other@example.com' }));
          expect((await store.findUsersByEmail('SAME@example.com')).map((u) => u.id).sort()).toEqual(['a', 'b']);
          expect(await store.findUsersByEmail('none@example.com')).toEqual([]);
        });
      });

      it('resealSecrets covers connector secrets too', async () => {
        await withStore(async (store) => {
          await store.createConnector(connector('sso', { secret: 'old-sealed' }));
          await store.createConnector(connector('plain', { secret: undefined }));
          const contexts: string[] = [];
          expect(await store.resealSecrets(({ context, value }) => (contexts.push(context), `re:${value}`))).toBe(1);
          expect(contexts).toEqual(['connector:sso']);
          expect((await store.findConnector('sso'))?.secret).toBe('re:old-sealed');
        });
      });

      it('resealSecrets covers client secrets kept for client_secret_jwt, current and previous, with context client_secret:<id>', async () => {
        await withStore(async (store) => {
          await store.createClient(client({ clientId: 'svc', secretHash: 'h1', secretSealed: 'sealed-1' }));
          await store.createClient(client({ clientId: 'public' }));
          await store.rotateClientSecret('svc', { hash: 'h2', sealed: 'sealed-2' }, t0 + 60);
          const contexts: string[] = [];
          expect(await store.resealSecrets(({ context, value }) => (contexts.push(context), `re:${value}`))).toBe(2);
          expect(contexts).toEqual(['client_secret:svc', 'client_secret:svc']);
          expect(await store.findClient('svc')).toMatchObject({
            secretHash: 'h2',
            secretSealed: 're:sealed-2',
            previousSecretHash: 'h1',
            previousSecretSealed: 're:sealed-1',
          });
        });
      });
      it('sampleStoredSecrets gives every value in the clear and one sealed value per key that sealed any, from every place secrets live', async () => {
        await withStore(async (store) => {
          expect(await store.sampleStoredSecrets()).toEqual([]);
          await store.serverSecret('csrf', () => 'lk1.KEYAAAAA.n.one');
          await store.serverSecret('user_code', () => 'lk1.KEYAAAAA.n.two');
          await store.serverSecret('interaction', () => 'lk1.KEYBBBBB.n.three');
          await store.createConnector(connector('sso', { secret: 'lk1.KEYCCCCC.n.four' }));
          await store.createClient(client({ clientId: 'svc', secretHash: 'h1', secretSealed: 'in the clear' }));
          await store.createUser(user());
          await store.saveTotp({ userId: 'user-alice', secret: 'lk1.KEYAAAAA.n.five', lastStep: 0, createdAt: t0 });
          const samples = await store.sampleStoredSecrets();
          const sealedKeys = samples
            .filter((s) => s.value.startsWith('lk1.'))
            .map((s) => s.value.slice(4, 12))
            .sort();
          expect(sealedKeys).toEqual(['KEYAAAAA', 'KEYBBBBB', 'KEYCCCCC']);
          // Each sample keeps the context it was sealed for.
          for (const sample of samples) {
            const expected = new Map([
              ['lk1.KEYAAAAA.n.one', 'server_secret:csrf'],
              ['lk1.KEYAAAAA.n.two', 'server_secret:user_code'],
              ['lk1.KEYAAAAA.n.five', 'totp:user-alice'],
              ['lk1.KEYBBBBB.n.three', 'server_secret:interaction'],
              ['lk1.KEYCCCCC.n.four', 'connector:sso'],
              ['in the clear', 'client_secret:svc'],
            ]).get(sample.value);
            expect({ value: sample.value, context: sample.context }).toEqual({ value: sample.value, context: expected });
          }
          expect(samples.filter((s) => !s.value.startsWith('lk1.'))).toEqual([{ context: 'client_secret:svc', value: 'in the clear' }]);
        });
      });
    });

    describe('apis', () => {
      it('creates, finds, lists sorted and removes APIs', async () => {
        await withStore(async (store) => {
          expect(await store.listApis()).toEqual([]);
          await store.createApi(api({ identifier: 'https://b.example.com', name: 'B' }));
          await store.createApi(api({ identifier: 'https://a.example.com', name: 'A' }));
          expect(await store.findApi('https://a.example.com')).toEqual(api({ identifier: 'https://a.example.com', name: 'A' }));
          expect(await store.findApi('https://c.example.com')).toBeUndefined();
          expect((await store.listApis()).map((a) => a.identifier)).toEqual(['https://a.example.com', 'https://b.example.com']);
          expect(await store.removeApi('https://a.example.com')).toBe(true);
          expect(await store.removeApi('https://a.example.com')).toBe(false);
          expect(await store.findApi('https://a.example.com')).toBeUndefined();
          expect(await store.listApis()).toEqual([api({ identifier: 'https://b.example.com', name: 'B' })]);
        });
      });

      it('refuses a duplicate identifier with DuplicateError', async () => {
        await withStore(async (store) => {
          await store.createApi(api({ name: 'First' }));
          await expect(store.createApi(api({ name: 'Second' }))).rejects.toBeInstanceOf(DuplicateError);
          expect((await store.findApi('https://api.example.com'))?.name).toBe('First');
        });
      });

      it('keeps introspection clients, and updateApi replaces the name and the list', async () => {
        await withStore(async (store) => {
          await store.createApi(api({ introspectionClients: ['rs-1', 'rs-2'] }));
          expect(await store.findApi('https://api.example.com')).toEqual(api({ introspectionClients: ['rs-1', 'rs-2'] }));
          expect(await store.updateApi(api({ name: 'Renamed', introspectionClients: ['rs-3'] }))).toBe(true);
          expect(await store.findApi('https://api.example.com')).toEqual(api({ name: 'Renamed', introspectionClients: ['rs-3'] }));
          expect(await store.updateApi(api({ identifier: 'https://none.example.com' }))).toBe(false);
          expect(await store.listApis()).toEqual([api({ name: 'Renamed', introspectionClients: ['rs-3'] })]);
        });
      });
    });

    describe('signing keys', () => {
      it('starts with none', async () => {
        await withStore(async (store) => {
          expect(await store.listSigningKeys()).toEqual([]);
        });
      });

      it('ensureSigningKey inserts only once when called twice', async () => {
        await withStore(async (store) => {
          await store.ensureSigningKey(signingKey('k1'));
          await store.ensureSigningKey(signingKey('k2', t0 + 1));
          const keys = await store.listSigningKeys();
          expect(keys).toEqual([{ ...signingKey('k1'), retiredAt: undefined }]);
          expect(keys[0]?.retiredAt).toBeUndefined();
        });
      });

      it('ensureSigningKey keeps one active key per algorithm (ES256 access tokens beside RS256 id_tokens)', async () => {
        await withStore(async (store) => {
          await store.ensureSigningKey(signingKey('rsa-1'));
          await store.ensureSigningKey(signingKey('ec-1', t0, 'ES256'));
          await store.ensureSigningKey(signingKey('ec-2', t0 + 1, 'ES256'));
          await store.ensureSigningKey(signingKey('ed-1', t0, 'EdDSA'));
          const keys = await store.listSigningKeys();
          expect(keys.map((k) => [k.kid, k.alg]).sort()).toEqual([
            ['ec-1', 'ES256'],
            ['ed-1', 'EdDSA'],
            ['rsa-1', 'RS256'],
          ]);
        });
      });
    });

    describe('the recorded issuer', () => {
      it('is undefined until a start records one; the newest start wins', async () => {
        await withStore(async (store) => {
          expect(await store.recordedIssuer()).toBeUndefined();
          await store.recordIssuer('https://id.example.com', t0);
          expect(await store.recordedIssuer()).toEqual({ issuer: 'https://id.example.com', recordedAt: t0 });
          await store.recordIssuer('http://localhost:41873', t0 + 60);
          expect(await store.recordedIssuer()).toEqual({ issuer: 'http://localhost:41873', recordedAt: t0 + 60 });
        });
      });
    });

    describe('server secrets', () => {
      it('returns the first generated value, even when later calls bring another generator', async () => {
        await withStore(async (store) => {
          expect(await store.serverSecret('csrf', () => 'first-value')).toBe('first-value');
          expect(await store.serverSecret('csrf', () => 'second-value')).toBe('first-value');
        });
      });

      it('keeps secrets of different names apart', async () => {
        await withStore(async (store) => {
          expect(await store.serverSecret('a', () => 'value-a')).toBe('value-a');
          expect(await store.serverSecret('b', () => 'value-b')).toBe('value-b');
          expect(await store.serverSecret('a', () => 'other')).toBe('value-a');
        });
      });

      it('findServerSecret reads without creating; removeServerSecret removes one name only, and says whether it was there', async () => {
        await withStore(async (store) => {
          expect(await store.findServerSecret('first_user_password')).toBeUndefined();
          await store.serverSecret('first_user_password', () => 'lk1.KEYAAAAA.n.pending');
          await store.serverSecret('csrf', () => 'csrf-value');
          expect(await store.findServerSecret('first_user_password')).toBe('lk1.KEYAAAAA.n.pending');
          expect(await store.removeServerSecret('first_user_password')).toBe(true);
          expect(await store.removeServerSecret('first_user_password')).toBe(false);
          expect(await store.findServerSecret('first_user_password')).toBeUndefined();
          expect(await store.findServerSecret('csrf')).toBe('csrf-value');
          // Made again by the next generator, as on a first use.
          expect(await store.serverSecret('first_user_password', () => 'lk1.KEYAAAAA.n.again')).toBe('lk1.KEYAAAAA.n.again');
        });
      });

      it('resealSecrets rewrites every signing key and server secret in one step, with its context, and counts changes', async () => {
        await withStore(async (store) => {
          await store.ensureSigningKey(signingKey('k1'));
          await store.ensureSigningKey(signingKey('k2', t0, 'ES256'));
          await store.serverSecret('csrf', () => 'csrf-value');
          await store.serverSecret('user_code', () => 'sealed:already');
          const seen: string[] = [];
          const changed = await store.resealSecrets(({ context, value }) => {
            seen.push(context);
            return value.startsWith('sealed:') ? value : `sealed:${context}:${value.length}`;
          });
          expect(changed).toBe(3);
          expect(seen.sort()).toEqual(['server_secret:csrf', 'server_secret:user_code', 'signing_key:k1', 'signing_key:k2']);
          const keys = await store.listSigningKeys();
          expect(keys.map((k) => k.privateKeyPem).sort()).toEqual([
            `sealed:signing_key:k1:${signingKey('k1').privateKeyPem.length}`,
            `sealed:signing_key:k2:${signingKey('k2').privateKeyPem.length}`,
          ]);
          expect(await store.serverSecret('csrf', () => 'other')).toBe('sealed:server_secret:csrf:10');
          expect(await store.serverSecret('user_code', () => 'other')).toBe('sealed:already');
          expect(await store.resealSecrets(({ value }) => value)).toBe(0);
        });
      });

      it('resealSecrets changes nothing when the function throws half way', async () => {
        await withStore(async (store) => {
          await store.ensureSigningKey(signingKey('k1'));
          await store.serverSecret('csrf', () => 'csrf-value');
          await expect(
            store.resealSecrets(({ context, value }) => {
              if (context.startsWith('server_secret')) throw new Error('no key');
              return `changed:${value}`;
            }),
          ).rejects.toThrow('no key');
          expect((await store.listSigningKeys())[0]?.privateKeyPem).toBe(signingKey('k1').privateKeyPem);
          expect(await store.serverSecret('csrf', () => 'x')).toBe('csrf-value');
        });
      });
    });

    describe('reclaimSpace', () => {
      it('can always be called, and releases no negative number of pages', async () => {
        await withSeededStore(async (store) => {
          for (let i = 0; i < 200; i++) await store.createSession(session({ idHash: `s-${i}`, expiresAt: t0 - 1 }));
          await store.purgeExpired(t0);
          expect(await store.reclaimSpace()).toBeGreaterThanOrEqual(0);
          expect(await store.reclaimSpace(1)).toBeGreaterThanOrEqual(0);
        });
      });
    });

    describe('sessions', () => {
      it("createSession with a guard stores nothing once the user's tokens were revoked since it was read", async () => {
        await withSeededStore(async (store) => {
          expect(await store.createSession(session({ idHash: 'before' }), { userTokensRevokedAt: undefined })).toBe(true);
          await store.revokeUserTokens('alice', t0 + 5);
          // A sign-in that read the user before the revocation.
          expect(await store.createSession(session({ idHash: 'racing' }), { userTokensRevokedAt: undefined })).toBe(false);
          expect(await store.findSession('racing', t0)).toBeUndefined();
          expect(await store.findSession('before', t0)).toBeUndefined(); // ended by the revocation
          // One that read it afterwards.
          expect(await store.createSession(session({ idHash: 'after' }), { userTokensRevokedAt: t0 + 5 })).toBe(true);
          expect(await store.findSession('after', t0)).toBeDefined();
          expect(await store.createSession(session({ idHash: 'unguarded' }))).toBe(true);
        });
      });

      it('keeps the authorization request a sign-in was made for', async () => {
        await withSeededStore(async (store) => {
          const s = session({ interactionId: 'interaction-7' });
          await store.createSession(s);
          expect(await store.findSession('session-hash-1', t0)).toStrictEqual(s);
          await store.createSession(session({ idHash: 'plain' }));
          expect((await store.findSession('plain', t0))?.interactionId).toBeUndefined();
        });
      });

      it('finds a session only before it expires', async () => {
        await withSeededStore(async (store) => {
          const s = session({ expiresAt: t0 + 100 });
          await store.createSession(s);
          expect(await store.findSession('session-hash-1', t0)).toEqual(s);
          expect(await store.findSession('session-hash-1', t0 + 99)).toEqual(s);
          expect(await store.findSession('session-hash-1', t0 + 100)).toBeUndefined();
          expect(await store.findSession('session-hash-1', t0 + 5000)).toBeUndefined();
        });
      });

      it('returns undefined for an unknown session and after deleteSession', async () => {
        await withSeededStore(async (store) => {
          await store.createSession(session());
          expect(await store.findSession('other', t0)).toBeUndefined();
          await store.deleteSession('session-hash-1');
          expect(await store.findSession('session-hash-1', t0)).toBeUndefined();
          await store.deleteSession('session-hash-1'); // deleting again is harmless
        });
      });
    });

    describe('device grants', () => {
      it('creates a grant and finds it by device code hash and by user code hash', async () => {
        await withSeededStore(async (store) => {
          const g = deviceGrant();
          await store.createDeviceGrant(g);
          expect(await store.findDeviceGrantByDeviceCode('device-grant-1')).toEqual(g);
          expect(await store.findDeviceGrantByUserCode('user-grant-1')).toEqual(g);
          const found = await store.findDeviceGrantByUserCode('user-grant-1');
          expect(found?.lastPolledAtMs).toBeUndefined();
          expect(found?.userId).toBeUndefined();
          expect(found?.decidedAt).toBeUndefined();
          expect(found?.consumedAt).toBeUndefined();
        });
      });

      it('returns undefined for unknown codes', async () => {
        await withSeededStore(async (store) => {
          await store.createDeviceGrant(deviceGrant());
          expect(await store.findDeviceGrantByDeviceCode('user-grant-1')).toBeUndefined();
          expect(await store.findDeviceGrantByUserCode('device-grant-1')).toBeUndefined();
          expect(await store.findDeviceGrantByDeviceCode('nope')).toBeUndefined();
        });
      });

      it('refuses a duplicate user code hash with DuplicateError', async () => {
        await withSeededStore(async (store) => {
          await store.createDeviceGrant(deviceGrant({ id: 'g1', userCodeHash: 'same-user-code' }));
          const dup = store.createDeviceGrant(deviceGrant({ id: 'g2', userCodeHash: 'same-user-code' }));
          await expect(dup).rejects.toBeInstanceOf(DuplicateError);
          expect(await store.findDeviceGrantByDeviceCode('device-g2')).toBeUndefined();
          expect((await store.findDeviceGrantByUserCode('same-user-code'))?.id).toBe('g1');
        });
      });

      it('refuses a duplicate device code hash with DuplicateError', async () => {
        await withSeededStore(async (store) => {
          await store.createDeviceGrant(deviceGrant({ id: 'g1', deviceCodeHash: 'same-device-code' }));
          await expect(store.createDeviceGrant(deviceGrant({ id: 'g2', deviceCodeHash: 'same-device-code' }))).rejects.toBeInstanceOf(DuplicateError);
          expect(await store.findDeviceGrantByUserCode('user-g2')).toBeUndefined();
        });
      });

      it('pollDeviceGrant returns the grant as it was BEFORE and stores the poll time and interval together', async () => {
        await withSeededStore(async (store) => {
          const g = deviceGrant();
          await store.createDeviceGrant(g);
          const firstMs = t0 * 1000 + 5_123;
          const secondMs = t0 * 1000 + 10_456;
          const seen: DeviceGrantRecord[] = [];

          const beforeFirst = await store.pollDeviceGrant('device-grant-1', 'cli', firstMs, (before) => {
            seen.push(before);
            return before.interval;
          });
          expect(beforeFirst).toEqual(g);
          expect(seen).toEqual([g]);
          expect((await store.findDeviceGrantByDeviceCode('device-grant-1'))?.lastPolledAtMs).toBe(firstMs);

          const beforeSecond = await store.pollDeviceGrant('device-grant-1', 'cli', secondMs, (before) => before.interval + 5);
          expect(beforeSecond).toEqual({ ...g, lastPolledAtMs: firstMs });
          expect(await store.findDeviceGrantByDeviceCode('device-grant-1')).toEqual({ ...g, lastPolledAtMs: secondMs, interval: 10 });
        });
      });

      it('pollDeviceGrant by another client returns the grant and changes nothing', async () => {
        await withSeededStore(async (store) => {
          const g = deviceGrant();
          await store.createDeviceGrant(g);
          let called = false;
          const seen = await store.pollDeviceGrant('device-grant-1', 'someone-else', t0 * 1000 + 1_000, () => {
            called = true;
            return 99;
          });
          expect(seen).toEqual(g);
          expect(called).toBe(false);
          expect(await store.findDeviceGrantByDeviceCode('device-grant-1')).toEqual(g);
        });
      });

      it('pollDeviceGrant of a grant no longer pending returns it and writes no poll', async () => {
        await withSeededStore(async (store) => {
          const g = deviceGrant();
          await store.createDeviceGrant(g);
          await store.pollDeviceGrant('device-grant-1', 'cli', t0 * 1000 + 5_000, (before) => before.interval);
          expect(await store.approveDeviceGrant('grant-1', 'user-alice', t0 + 30, ['pwd'], t0 + 60)).toBe(true);
          const approved = await store.findDeviceGrantByDeviceCode('device-grant-1');
          let called = false;
          const seen = await store.pollDeviceGrant('device-grant-1', 'cli', t0 * 1000 + 6_000, () => {
            called = true;
            return 99;
          });
          expect(seen).toEqual(approved);
          expect(called).toBe(false);
          expect(await store.findDeviceGrantByDeviceCode('device-grant-1')).toEqual(approved);
          expect(approved?.lastPolledAtMs).toBe(t0 * 1000 + 5_000);
        });
      });

      it('pollDeviceGrant of an unknown device code is undefined and changes nothing', async () => {
        await withSeededStore(async (store) => {
          await store.createDeviceGrant(deviceGrant());
          expect(await store.pollDeviceGrant('nope', 'cli', t0 * 1000, (before) => before.interval)).toBeUndefined();
          expect((await store.findDeviceGrantByDeviceCode('device-grant-1'))?.lastPolledAtMs).toBeUndefined();
        });
      });

      it('approve: pending → approved with user, auth time, how they signed in and decision time', async () => {
        await withSeededStore(async (store) => {
          const g = deviceGrant({ acrValues: 'urn:latchkey:mfa' });
          await store.createDeviceGrant(g);
          expect(await store.findDeviceGrantByUserCode('user-grant-1')).toStrictEqual(g);
          expect(await store.approveDeviceGrant('grant-1', 'user-alice', t0 + 30, ['pwd', 'otp'], t0 + 60)).toBe(true);
          expect(await store.findDeviceGrantByUserCode('user-grant-1')).toStrictEqual({
            ...g,
            status: 'approved',
            userId: 'user-alice',
            authTime: t0 + 30,
            amr: ['pwd', 'otp'],
            decidedAt: t0 + 60,
          });
        });
      });

      it('approve only while pending: a second approval and approving a denied grant fail', async () => {
        await withStore(async (store) => {
          await store.createUser(user({ username: 'alice' }));
          await store.createUser(user({ username: 'bob' }));
          await store.createClient(client());
          await store.createDeviceGrant(deviceGrant({ id: 'g1' }));
          await store.createDeviceGrant(deviceGrant({ id: 'g2' }));
          expect(await store.approveDeviceGrant('g1', 'user-alice', t0, ['pwd'], t0 + 10)).toBe(true);
          expect(await store.approveDeviceGrant('g1', 'user-bob', t0, ['pwd'], t0 + 20)).toBe(false);
          const g1 = await store.findDeviceGrantByDeviceCode('device-g1');
          expect(g1?.userId).toBe('user-alice');
          expect(g1?.decidedAt).toBe(t0 + 10);

          expect(await store.denyDeviceGrant('g2', t0 + 10)).toBe(true);
          expect(await store.approveDeviceGrant('g2', 'user-alice', t0, ['pwd'], t0 + 20)).toBe(false);
          const g2 = await store.findDeviceGrantByDeviceCode('device-g2');
          expect(g2?.status).toBe('denied');
          expect(g2?.userId).toBeUndefined();
        });
      });

      it('approve only while unexpired (expiresAt is the first instant of expiry)', async () => {
        await withSeededStore(async (store) => {
          await store.createDeviceGrant(deviceGrant({ id: 'late', expiresAt: t0 + 900 }));
          await store.createDeviceGrant(deviceGrant({ id: 'edge', expiresAt: t0 + 900 }));
          expect(await store.approveDeviceGrant('late', 'user-alice', t0, ['pwd'], t0 + 901)).toBe(false);
          expect(await store.approveDeviceGrant('edge', 'user-alice', t0, ['pwd'], t0 + 900)).toBe(false);
          expect((await store.findDeviceGrantByDeviceCode('device-late'))?.status).toBe('pending');
          expect((await store.findDeviceGrantByDeviceCode('device-edge'))?.status).toBe('pending');
          expect(await store.approveDeviceGrant('edge', 'user-alice', t0, ['pwd'], t0 + 899)).toBe(true);
        });
      });

      it('approve/deny of a missing grant is false', async () => {
        await withSeededStore(async (store) => {
          expect(await store.approveDeviceGrant('missing', 'user-alice', t0, ['pwd'], t0)).toBe(false);
          expect(await store.denyDeviceGrant('missing', t0)).toBe(false);
        });
      });

      it('deny: pending → denied with decision time, and only while pending', async () => {
        await withSeededStore(async (store) => {
          const g = deviceGrant({ id: 'g1' });
          await store.createDeviceGrant(g);
          await store.createDeviceGrant(deviceGrant({ id: 'g2' }));
          expect(await store.denyDeviceGrant('g1', t0 + 40)).toBe(true);
          expect(await store.findDeviceGrantByDeviceCode('device-g1')).toEqual({ ...g, status: 'denied', decidedAt: t0 + 40 });
          expect(await store.denyDeviceGrant('g1', t0 + 50)).toBe(false);
          expect((await store.findDeviceGrantByDeviceCode('device-g1'))?.decidedAt).toBe(t0 + 40);

          expect(await store.approveDeviceGrant('g2', 'user-alice', t0, ['pwd'], t0 + 10)).toBe(true);
          expect(await store.denyDeviceGrant('g2', t0 + 20)).toBe(false);
          expect((await store.findDeviceGrantByDeviceCode('device-g2'))?.status).toBe('approved');
        });
      });

      it('deny only while unexpired', async () => {
        await withSeededStore(async (store) => {
          await store.createDeviceGrant(deviceGrant({ expiresAt: t0 + 900 }));
          expect(await store.denyDeviceGrant('grant-1', t0 + 900)).toBe(false);
          expect((await store.findDeviceGrantByDeviceCode('device-grant-1'))?.status).toBe('pending');
        });
      });

      it('consumeDeviceGrant succeeds exactly once and returns the consumed record', async () => {
        await withSeededStore(async (store) => {
          const g = deviceGrant();
          await store.createDeviceGrant(g);
          await store.pollDeviceGrant('device-grant-1', 'cli', t0 * 1000 + 20_000, (before) => before.interval);
          expect(await store.approveDeviceGrant('grant-1', 'user-alice', t0 + 30, ['pwd'], t0 + 60)).toBe(true);
          const expected: DeviceGrantRecord = {
            ...g,
            status: 'consumed',
            lastPolledAtMs: t0 * 1000 + 20_000,
            userId: 'user-alice',
            authTime: t0 + 30,
            amr: ['pwd'],
            decidedAt: t0 + 60,
            consumedAt: t0 + 65,
          };
          expect(await store.consumeDeviceGrant('grant-1', t0 + 65)).toEqual(expected);
          expect(await store.consumeDeviceGrant('grant-1', t0 + 66)).toBeUndefined();
          expect(await store.findDeviceGrantByDeviceCode('device-grant-1')).toEqual(expected);
        });
      });

      it('concurrent consumes: exactly one wins', async () => {
        await withSeededStore(async (store) => {
          await store.createDeviceGrant(deviceGrant());
          expect(await store.approveDeviceGrant('grant-1', 'user-alice', t0, ['pwd'], t0 + 10)).toBe(true);
          const results = await Promise.all(Array.from({ length: 8 }, () => store.consumeDeviceGrant('grant-1', t0 + 20)));
          expect(results.filter((r) => r !== undefined)).toHaveLength(1);
          expect(results.find((r) => r !== undefined)?.status).toBe('consumed');
        });
      });

      it('consume of a pending, denied or expired grant is undefined and changes nothing', async () => {
        await withSeededStore(async (store) => {
          await createUnspendableGrants(store);

          expect(await store.consumeDeviceGrant('pending', t0 + 20)).toBeUndefined();
          expect(await store.consumeDeviceGrant('denied', t0 + 20)).toBeUndefined();
          expect(await store.consumeDeviceGrant('expired', t0 + 900)).toBeUndefined();
          expect(await store.consumeDeviceGrant('expired', t0 + 5000)).toBeUndefined();

          expect((await store.findDeviceGrantByDeviceCode('device-pending'))?.status).toBe('pending');
          expect((await store.findDeviceGrantByDeviceCode('device-denied'))?.status).toBe('denied');
          const expired = await store.findDeviceGrantByDeviceCode('device-expired');
          expect(expired?.status).toBe('approved');
          expect(expired?.consumedAt).toBeUndefined();
        });
      });

      it('consume of a missing grant is undefined', async () => {
        await withSeededStore(async (store) => {
          expect(await store.consumeDeviceGrant('missing', t0)).toBeUndefined();
        });
      });

      it('redeemDeviceGrant spends the grant and stores its refresh token in one step, exactly once, recording what it handed out', async () => {
        await withSeededStore(async (store) => {
          const g = deviceGrant();
          await store.createDeviceGrant(g);
          expect(await store.approveDeviceGrant('grant-1', 'user-alice', t0 + 30, ['pwd'], t0 + 60)).toBe(true);
          const rt = refreshToken({ id: 'redeemed', tokenHash: 'redeemed-hash', familyId: 'redeemed-family', accessTokenJti: 'at-jti' });
          const expected: DeviceGrantRecord = {
            ...g,
            status: 'consumed',
            userId: 'user-alice',
            authTime: t0 + 30,
            amr: ['pwd'],
            decidedAt: t0 + 60,
            consumedAt: t0 + 65,
            accessTokenJti: 'at-jti',
            refreshFamilyId: 'redeemed-family',
            issuedAt: t0 + 65,
            dpopJkt: 'jkt-device',
          };
          expect(
            await store.redeemDeviceGrant(
              'grant-1',
              t0 + 65,
              { token: rt, guard: { userTokensRevokedAt: undefined } },
              { accessTokenJti: 'at-jti', dpopJkt: 'jkt-device' },
            ),
          ).toEqual({
            grant: expected,
            refreshTokenStored: true,
          });
          expect(await store.findRefreshToken('redeemed-hash')).toEqual(rt);
          // Spent: a second redemption gets nothing and stores nothing.
          const second = refreshToken({ id: 'second', tokenHash: 'second-hash', familyId: 'second-family' });
          expect(await store.redeemDeviceGrant('grant-1', t0 + 66, { token: second, guard: { userTokensRevokedAt: undefined } })).toBeUndefined();
          expect(await store.findRefreshToken('second-hash')).toBeUndefined();
          expect(await store.findDeviceGrantByDeviceCode('device-grant-1')).toEqual(expected);
        });
      });

      it('redeemDeviceGrant without a refresh token spends the grant only', async () => {
        await withSeededStore(async (store) => {
          await store.createDeviceGrant(deviceGrant());
          expect(await store.approveDeviceGrant('grant-1', 'user-alice', t0, ['pwd'], t0 + 10)).toBe(true);
          const redeemed = await store.redeemDeviceGrant('grant-1', t0 + 20);
          expect(redeemed).toMatchObject({ grant: { id: 'grant-1', status: 'consumed', consumedAt: t0 + 20 }, refreshTokenStored: false });
        });
      });

      it('concurrent redemptions: exactly one wins, and only its refresh token is stored', async () => {
        await withSeededStore(async (store) => {
          await store.createDeviceGrant(deviceGrant());
          expect(await store.approveDeviceGrant('grant-1', 'user-alice', t0, ['pwd'], t0 + 10)).toBe(true);
          const results = await Promise.all(
            Array.from({ length: 8 }, (_, i) =>
              store.redeemDeviceGrant('grant-1', t0 + 20, {
                token: refreshToken({ id: `rt-${i}`, tokenHash: `hash-${i}`, familyId: `family-${i}` }),
                guard: { userTokensRevokedAt: undefined },
              }),
            ),
          );
          expect(results.filter((r) => r !== undefined)).toHaveLength(1);
          const stored = await Promise.all(Array.from({ length: 8 }, (_, i) => store.findRefreshToken(`hash-${i}`)));
          expect(stored.filter((t) => t !== undefined)).toHaveLength(1);
          expect(stored.findIndex((t) => t !== undefined)).toBe(results.findIndex((r) => r !== undefined));
        });
      });

      it('redeemDeviceGrant of a pending, denied, expired or missing grant is undefined and stores no refresh token', async () => {
        await withSeededStore(async (store) => {
          await createUnspendableGrants(store);
          const guard = { userTokensRevokedAt: undefined };
          for (const [id, now] of [
            ['pending', t0 + 20],
            ['denied', t0 + 20],
            ['expired', t0 + 900],
            ['missing', t0],
          ] as const) {
            expect(
              await store.redeemDeviceGrant(id, now, { token: refreshToken({ id: `rt-${id}`, tokenHash: `hash-${id}`, familyId: `family-${id}` }), guard }),
            ).toBeUndefined();
            expect(await store.findRefreshToken(`hash-${id}`)).toBeUndefined();
          }
          expect((await store.findDeviceGrantByDeviceCode('device-expired'))?.status).toBe('approved');
        });
      });

      it("redeemDeviceGrant spends the grant but stores no refresh token once the user's tokens were revoked since they were read", async () => {
        await withSeededStore(async (store) => {
          await store.createDeviceGrant(deviceGrant());
          expect(await store.approveDeviceGrant('grant-1', 'user-alice', t0, ['pwd'], t0 + 10)).toBe(true);
          await store.revokeUserTokens('alice', t0 + 15);
          const redeemed = await store.redeemDeviceGrant('grant-1', t0 + 20, {
            token: refreshToken({ id: 'racing', tokenHash: 'racing' }),
            guard: { userTokensRevokedAt: undefined },
          });
          expect(redeemed).toMatchObject({ grant: { status: 'consumed' }, refreshTokenStored: false });
          expect(await store.findRefreshToken('racing')).toBeUndefined();
        });
      });
    });

    describe('refresh tokens', () => {
      it('creates and finds a refresh token by hash', async () => {
        await withSeededStore(async (store) => {
          const rt = refreshToken();
          await store.createRefreshToken(rt);
          expect(await store.findRefreshToken('refresh-hash-1')).toEqual(rt);
          expect(await store.findRefreshToken('rt-1')).toBeUndefined();
          expect(await store.findRefreshToken('nope')).toBeUndefined();
        });
      });
    });

    describe('consents', () => {
      it('findConsent is undefined before any consent', async () => {
        await withSeededStore(async (store) => {
          expect(await store.findConsent('user-alice', 'cli', 'https://api.example.com')).toBeUndefined();
        });
      });

      it('saveConsent inserts a consent that findConsent returns intact', async () => {
        await withSeededStore(async (store) => {
          const c = consent();
          await store.saveConsent(c);
          expect(await store.findConsent('user-alice', 'cli', 'https://api.example.com')).toStrictEqual(c);
        });
      });

      it('saveConsent for the same user, client and audience replaces scope and grantedAt', async () => {
        await withSeededStore(async (store) => {
          await store.saveConsent(consent({ scope: 'openid', grantedAt: t0 }));
          await store.saveConsent(consent({ scope: 'openid email profile', grantedAt: t0 + 50 }));
          expect(await store.findConsent('user-alice', 'cli', 'https://api.example.com')).toStrictEqual(
            consent({ scope: 'openid email profile', grantedAt: t0 + 50 }),
          );
          // A narrower later consent replaces too: the store keeps what it is given.
          await store.saveConsent(consent({ scope: 'openid', grantedAt: t0 + 90 }));
          expect(await store.findConsent('user-alice', 'cli', 'https://api.example.com')).toStrictEqual(consent({ scope: 'openid', grantedAt: t0 + 90 }));
        });
      });

      it('consents of another audience, client or user are kept apart', async () => {
        await withSeededStore(async (store) => {
          await store.createUser(user({ username: 'bob' }));
          await store.createClient(client({ clientId: 'other' }));
          const mine = consent({ scope: 'openid email' });
          const otherAudience = consent({ audience: 'https://other-api.example.com', scope: 'openid profile', grantedAt: t0 + 1 });
          const otherClient = consent({ clientId: 'other', scope: 'openid offline_access', grantedAt: t0 + 2 });
          const otherUser = consent({ userId: 'user-bob', scope: 'openid', grantedAt: t0 + 3 });
          for (const c of [mine, otherAudience, otherClient, otherUser]) await store.saveConsent(c);

          await store.saveConsent(consent({ scope: 'openid email profile', grantedAt: t0 + 10 }));

          expect(await store.findConsent('user-alice', 'cli', 'https://api.example.com')).toStrictEqual(
            consent({ scope: 'openid email profile', grantedAt: t0 + 10 }),
          );
          expect(await store.findConsent('user-alice', 'cli', 'https://other-api.example.com')).toStrictEqual(otherAudience);
          expect(await store.findConsent('user-alice', 'other', 'https://api.example.com')).toStrictEqual(otherClient);
          expect(await store.findConsent('user-bob', 'cli', 'https://api.example.com')).toStrictEqual(otherUser);
          expect(await store.findConsent('user-bob', 'other', 'https://api.example.com')).toBeUndefined();
        });
      });
    });

    describe('authorization codes', () => {
      const issued = { accessTokenJti: 'jti-first', refreshFamilyId: 'family-first' };

      it('creates and finds a code with every field intact', async () => {
        await withSeededStore(async (store) => {
          const c = authorizationCode();
          await store.createAuthorizationCode(c);
          expect(await store.findAuthorizationCode('code-hash-1')).toStrictEqual(c);
        });
      });

      it('optional fields left undefined come back undefined', async () => {
        await withSeededStore(async (store) => {
          const c = authorizationCode({ nonce: undefined, codeChallenge: undefined });
          await store.createAuthorizationCode(c);
          const found = await store.findAuthorizationCode('code-hash-1');
          expect(found).toStrictEqual(c);
          expect(found?.nonce).toBeUndefined();
          expect(found?.codeChallenge).toBeUndefined();
          expect(found?.consumedAt).toBeUndefined();
          expect(found?.accessTokenJti).toBeUndefined();
          expect(found?.refreshFamilyId).toBeUndefined();
        });
      });

      it('returns undefined for an unknown code', async () => {
        await withSeededStore(async (store) => {
          await store.createAuthorizationCode(authorizationCode());
          expect(await store.findAuthorizationCode('code-hash-2')).toBeUndefined();
          expect(await store.consumeAuthorizationCode('code-hash-2', t0, issued)).toBeUndefined();
        });
      });

      it('consumeAuthorizationCode succeeds exactly once, recording consumedAt and what it issued', async () => {
        await withSeededStore(async (store) => {
          const c = authorizationCode();
          await store.createAuthorizationCode(c);
          const expected: AuthorizationCodeRecord = {
            ...c,
            consumedAt: t0 + 10,
            accessTokenJti: 'jti-first',
            refreshFamilyId: 'family-first',
          };
          expect(await store.consumeAuthorizationCode('code-hash-1', t0 + 10, issued)).toStrictEqual(expected);
          expect(await store.findAuthorizationCode('code-hash-1')).toStrictEqual(expected);

          // A replay is refused and does not overwrite what the first redemption issued.
          expect(
            await store.consumeAuthorizationCode('code-hash-1', t0 + 11, { accessTokenJti: 'jti-second', refreshFamilyId: 'family-second' }),
          ).toBeUndefined();
          expect(await store.findAuthorizationCode('code-hash-1')).toStrictEqual(expected);
        });
      });

      it('concurrent consumes: exactly one wins, and its ids are the ones stored', async () => {
        await withSeededStore(async (store) => {
          await store.createAuthorizationCode(authorizationCode());
          const results = await Promise.all(
            Array.from({ length: 8 }, (_, n) =>
              store.consumeAuthorizationCode('code-hash-1', t0 + 5, { accessTokenJti: `jti-${n}`, refreshFamilyId: `family-${n}` }),
            ),
          );
          const winners = results.filter((r) => r !== undefined);
          expect(winners).toHaveLength(1);
          const found = await store.findAuthorizationCode('code-hash-1');
          expect(found?.accessTokenJti).toBe(winners[0]?.accessTokenJti);
          expect(found?.refreshFamilyId).toBe(winners[0]?.refreshFamilyId);
          expect(found?.consumedAt).toBe(t0 + 5);
        });
      });

      it('refuses an expired code (now >= expiresAt) and leaves it unconsumed', async () => {
        await withSeededStore(async (store) => {
          const edge = authorizationCode({ codeHash: 'edge', expiresAt: t0 + 60 });
          const late = authorizationCode({ codeHash: 'late', expiresAt: t0 + 60 });
          await store.createAuthorizationCode(edge);
          await store.createAuthorizationCode(late);
          expect(await store.consumeAuthorizationCode('edge', t0 + 60, issued)).toBeUndefined();
          expect(await store.consumeAuthorizationCode('late', t0 + 61, issued)).toBeUndefined();
          expect(await store.findAuthorizationCode('edge')).toStrictEqual(edge);
          expect(await store.findAuthorizationCode('late')).toStrictEqual(late);
        });
      });

      it('accepts a code in the last second before expiresAt', async () => {
        await withSeededStore(async (store) => {
          const c = authorizationCode({ expiresAt: t0 + 60 });
          await store.createAuthorizationCode(c);
          expect(await store.consumeAuthorizationCode('code-hash-1', t0 + 59, issued)).toStrictEqual({
            ...c,
            consumedAt: t0 + 59,
            accessTokenJti: 'jti-first',
            refreshFamilyId: 'family-first',
          });
        });
      });

      it('consuming one code leaves another untouched', async () => {
        await withSeededStore(async (store) => {
          const other = authorizationCode({ codeHash: 'code-hash-2' });
          await store.createAuthorizationCode(authorizationCode());
          await store.createAuthorizationCode(other);
          expect(await store.consumeAuthorizationCode('code-hash-1', t0 + 1, issued)).toBeDefined();
          expect(await store.findAuthorizationCode('code-hash-2')).toStrictEqual(other);
        });
      });
    });

    describe('refresh token families', () => {
      it('revokeRefreshFamily revokes every token of that family and no other', async () => {
        await withSeededStore(async (store) => {
          const a1 = refreshToken({ id: 'a1', tokenHash: 'a1', familyId: 'family-a' });
          const a2 = refreshToken({ id: 'a2', tokenHash: 'a2', familyId: 'family-a', createdAt: t0 + 10 });
          const b1 = refreshToken({ id: 'b1', tokenHash: 'b1', familyId: 'family-b' });
          for (const t of [a1, a2, b1]) await store.createRefreshToken(t);
          await store.revokeRefreshFamily('family-a', t0 + 20);
          expect(await store.findRefreshToken('a1')).toStrictEqual({ ...a1, revokedAt: t0 + 20 });
          expect(await store.findRefreshToken('a2')).toStrictEqual({ ...a2, revokedAt: t0 + 20 });
          expect(await store.findRefreshToken('b1')).toStrictEqual(b1);
        });
      });

      it('revoking again, or revoking an unknown family, is harmless', async () => {
        await withSeededStore(async (store) => {
          const b1 = refreshToken({ id: 'b1', tokenHash: 'b1', familyId: 'family-b' });
          await store.createRefreshToken(refreshToken({ id: 'a1', tokenHash: 'a1', familyId: 'family-a' }));
          await store.createRefreshToken(b1);
          await store.revokeRefreshFamily('family-a', t0 + 1);
          await store.revokeRefreshFamily('family-a', t0 + 2);
          await store.revokeRefreshFamily('no-such-family', t0 + 3);
          expect((await store.findRefreshToken('a1'))?.revokedAt).toBe(t0 + 1); // the first revocation's time stays
          expect(await store.findRefreshToken('b1')).toStrictEqual(b1);
        });
      });

      it('rotateRefreshToken marks the token rotated and inserts the successor, once', async () => {
        await withSeededStore(async (store) => {
          const old = refreshToken({ id: 'old', tokenHash: 'old' });
          const next = refreshToken({ id: 'next', tokenHash: 'next', createdAt: t0 + 10 });
          const other = refreshToken({ id: 'other', tokenHash: 'other', createdAt: t0 + 10 });
          await store.createRefreshToken(old);
          expect(await store.rotateRefreshToken('old', next, t0 + 10)).toBe(true);
          expect(await store.findRefreshToken('old')).toStrictEqual({ ...old, rotatedAt: t0 + 10 });
          expect(await store.findRefreshToken('next')).toStrictEqual(next);
          // A second rotation of the same token loses and inserts nothing.
          expect(await store.rotateRefreshToken('old', other, t0 + 11)).toBe(false);
          expect(await store.findRefreshToken('other')).toBeUndefined();
          expect((await store.findRefreshToken('old'))?.rotatedAt).toBe(t0 + 10);
        });
      });

      it('rotateRefreshToken refuses a revoked token', async () => {
        await withSeededStore(async (store) => {
          await store.createRefreshToken(refreshToken({ id: 'old', tokenHash: 'old' }));
          await store.revokeRefreshFamily('family-1', t0 + 5);
          expect(await store.rotateRefreshToken('old', refreshToken({ id: 'next', tokenHash: 'next' }), t0 + 10)).toBe(false);
          expect(await store.findRefreshToken('next')).toBeUndefined();
        });
      });

      it("createRefreshToken with a guard stores nothing once the user's tokens were revoked since it was read", async () => {
        await withSeededStore(async (store) => {
          await store.revokeUserTokens('alice', t0 + 5);
          expect(await store.createRefreshToken(refreshToken({ id: 'racing', tokenHash: 'racing' }), { userTokensRevokedAt: undefined })).toBe(false);
          expect(await store.findRefreshToken('racing')).toBeUndefined();
          expect(await store.createRefreshToken(refreshToken({ id: 'fresh', tokenHash: 'fresh', familyId: 'f2' }), { userTokensRevokedAt: t0 + 5 })).toBe(true);
          expect((await store.findRefreshToken('fresh'))?.revokedAt).toBeUndefined();
        });
      });

      it("rotating one answer of a race leaves its siblings live, each a branch of the family; the parent's race is then over", async () => {
        await withSeededStore(async (store) => {
          const bounds = { limit: 2, liveBranches: 5, now: t0 + 1 };
          await store.createRefreshToken(refreshToken({ id: 'p', tokenHash: 'p' }));
          const first = refreshToken({ id: 'first', tokenHash: 'first', parentId: 'p' });
          expect(await store.rotateRefreshToken('p', first, t0 + 1)).toBe(true);
          // A racing process reusing p within the grace window gets a successor of its own.
          const grace = refreshToken({ id: 'grace', tokenHash: 'grace', parentId: 'p' });
          expect(await store.addGraceSuccessor('p', grace, bounds)).toBe(true);
          // Each process goes on with its own answer, in either order.
          expect(await store.rotateRefreshToken('grace', refreshToken({ id: 'g2', tokenHash: 'g2', parentId: 'grace' }), t0 + 2)).toBe(true);
          expect(await store.findRefreshToken('first')).toStrictEqual(first);
          expect(await store.rotateRefreshToken('first', refreshToken({ id: 'f2', tokenHash: 'f2', parentId: 'first' }), t0 + 3)).toBe(true);
          expect((await store.findRefreshToken('f2'))?.supersededAt).toBeUndefined();
          expect((await store.findRefreshToken('g2'))?.supersededAt).toBeUndefined();
          // No more grace successors of p: one of its successors is in use, the race is over.
          expect(await store.addGraceSuccessor('p', refreshToken({ id: 'late', tokenHash: 'late', parentId: 'p' }), bounds)).toBe('successor_used');
          expect(await store.findRefreshToken('late')).toBeUndefined();
          expect(await store.isRefreshFamilyRevoked('family-1')).toBe(false);
        });
      });

      it('a superseded token (the lost answer a retry replaced) gets no grace successor either', async () => {
        await withSeededStore(async (store) => {
          await store.createRefreshToken(refreshToken({ id: 'p', tokenHash: 'p' }));
          expect(await store.rotateRefreshToken('p', refreshToken({ id: 'a', tokenHash: 'a', parentId: 'p', createdAt: t0 + 1 }), t0 + 1)).toBe(true);
          expect(await store.retryRotation('p', refreshToken({ id: 'r', tokenHash: 'r', parentId: 'p', createdAt: t0 + 8 }), t0 + 8, 5, 5)).toBe(true);
          expect((await store.findRefreshToken('a'))?.supersededAt).toBe(t0 + 8);
          // a is dead; whoever presents it within its own "grace" gets nothing.
          expect(
            await store.addGraceSuccessor('a', refreshToken({ id: 'a2', tokenHash: 'a2', parentId: 'a' }), { limit: 2, liveBranches: 5, now: t0 + 9 }),
          ).toBe('successor_used');
          expect(await store.findRefreshToken('a2')).toBeUndefined();
        });
      });

      it('grace successors are limited, and refused once the first successor was used or the family revoked', async () => {
        await withSeededStore(async (store) => {
          const bounds = (limit: number) => ({ limit, liveBranches: 5, now: t0 + 1 });
          await store.createRefreshToken(refreshToken({ id: 'p', tokenHash: 'p' }));
          expect(await store.rotateRefreshToken('p', refreshToken({ id: 's0', tokenHash: 's0', parentId: 'p' }), t0 + 1)).toBe(true);
          expect(await store.addGraceSuccessor('p', refreshToken({ id: 's1', tokenHash: 's1', parentId: 'p' }), bounds(2))).toBe(true);
          expect(await store.addGraceSuccessor('p', refreshToken({ id: 's2', tokenHash: 's2', parentId: 'p' }), bounds(2))).toBe(true);
          expect(await store.addGraceSuccessor('p', refreshToken({ id: 's3', tokenHash: 's3', parentId: 'p' }), bounds(2))).toBe('limit');
          expect(await store.findRefreshToken('s3')).toBeUndefined();
          await store.revokeRefreshFamily('family-1', t0 + 2);
          expect(await store.addGraceSuccessor('p', refreshToken({ id: 's4', tokenHash: 's4', parentId: 'p' }), bounds(5))).toBe('revoked');
        });
      });

      it('a family keeps at most liveBranches live tokens: a race past it supersedes the tips of other branches made longest ago, never its own answers', async () => {
        await withSeededStore(async (store) => {
          const bounds = { limit: 2, liveBranches: 3, now: t0 + 100 };
          await store.createRefreshToken(refreshToken({ id: 'p', tokenHash: 'p' }));
          // A first race: three answers, three branches.
          expect(await store.rotateRefreshToken('p', refreshToken({ id: 'old', tokenHash: 'old', parentId: 'p', createdAt: t0 + 1 }), t0 + 1)).toBe(true);
          expect(await store.addGraceSuccessor('p', refreshToken({ id: 'older', tokenHash: 'older', parentId: 'p', createdAt: t0 + 1 }), bounds)).toBe(true);
          expect(await store.addGraceSuccessor('p', refreshToken({ id: 'kept', tokenHash: 'kept', parentId: 'p', createdAt: t0 + 2 }), bounds)).toBe(true);
          for (const id of ['old', 'older', 'kept']) expect((await store.findRefreshToken(id))?.supersededAt).toBeUndefined();
          // An expired tip does not count, nor is it touched.
          await store.createRefreshToken(refreshToken({ id: 'idle', tokenHash: 'idle', parentId: 'p', createdAt: t0, expiresAt: t0 + 50 }));
          // A second race, on the kept branch: its two answers live; of the other tips only the newest fits.
          expect(await store.rotateRefreshToken('kept', refreshToken({ id: 'k1', tokenHash: 'k1', parentId: 'kept', createdAt: t0 + 100 }), t0 + 100)).toBe(
            true,
          );
          expect(await store.addGraceSuccessor('kept', refreshToken({ id: 'k2', tokenHash: 'k2', parentId: 'kept', createdAt: t0 + 100 }), bounds)).toBe(true);
          const superseded = async (id: string) => (await store.findRefreshToken(id))?.supersededAt;
          expect(await superseded('k1')).toBeUndefined();
          expect(await superseded('k2')).toBeUndefined();
          // 'old' and 'older' were made in the same second: the order of their ids decides, the same on every store.
          expect(await superseded('old')).toBe(t0 + 100);
          expect(await superseded('older')).toBeUndefined();
          expect(await superseded('idle')).toBeUndefined();
          expect(await store.isRefreshFamilyRevoked('family-1')).toBe(false);
          // The race's own answers are never pruned, even past the bound (a race of three on a bound of two).
          const tight = { limit: 2, liveBranches: 2, now: t0 + 101 };
          expect(await store.rotateRefreshToken('k1', refreshToken({ id: 'm0', tokenHash: 'm0', parentId: 'k1', createdAt: t0 + 101 }), t0 + 101)).toBe(true);
          expect(await store.addGraceSuccessor('k1', refreshToken({ id: 'm1', tokenHash: 'm1', parentId: 'k1', createdAt: t0 + 101 }), tight)).toBe(true);
          expect(await store.addGraceSuccessor('k1', refreshToken({ id: 'm2', tokenHash: 'm2', parentId: 'k1', createdAt: t0 + 101 }), tight)).toBe(true);
          for (const id of ['m0', 'm1', 'm2']) expect(await superseded(id)).toBeUndefined();
          expect(await superseded('k2')).toBe(t0 + 101);
          expect(await superseded('older')).toBe(t0 + 101);
        });
      });

      it('retryRotation supersedes every unused successor, revokes the access tokens they came with, and inserts the new one', async () => {
        await withSeededStore(async (store) => {
          await store.createRefreshToken(refreshToken({ id: 'p', tokenHash: 'p', accessTokenJti: 'jti-p' }));
          expect(await store.rotateRefreshToken('p', refreshToken({ id: 'lost', tokenHash: 'lost', parentId: 'p', accessTokenJti: 'jti-lost' }), t0 + 1)).toBe(
            true,
          );
          expect(
            await store.addGraceSuccessor('p', refreshToken({ id: 'grace', tokenHash: 'grace', parentId: 'p', accessTokenJti: 'jti-grace' }), {
              limit: 2,
              liveBranches: 5,
              now: t0 + 1,
            }),
          ).toBe(true);
          const retried = refreshToken({ id: 'retried', tokenHash: 'retried', parentId: 'p', accessTokenJti: 'jti-retried', createdAt: t0 + 30 });
          expect(await store.retryRotation('p', retried, t0 + 30, 5, 5)).toBe(true);
          expect(await store.findRefreshToken('retried')).toEqual(retried);
          expect((await store.findRefreshToken('lost'))?.supersededAt).toBe(t0 + 30);
          expect((await store.findRefreshToken('grace'))?.supersededAt).toBe(t0 + 30);
          expect(await store.isAccessTokenRevoked('jti-lost')).toBe(true);
          expect(await store.isAccessTokenRevoked('jti-grace')).toBe(true);
          expect(await store.isAccessTokenRevoked('jti-p')).toBe(false);
          expect(await store.isAccessTokenRevoked('jti-retried')).toBe(false);
          // The retried branch rotates on; the lost ones cannot.
          expect(await store.rotateRefreshToken('lost', refreshToken({ id: 'l2', tokenHash: 'l2', parentId: 'lost' }), t0 + 31)).toBe(false);
          expect(await store.rotateRefreshToken('retried', refreshToken({ id: 'r2', tokenHash: 'r2', parentId: 'retried' }), t0 + 31)).toBe(true);
        });
      });

      it('retryRotation is refused once a successor was used, past the limit, for a token never rotated, a superseded one, or a revoked family', async () => {
        await withSeededStore(async (store) => {
          await store.createRefreshToken(refreshToken({ id: 'p', tokenHash: 'p' }));
          expect(await store.retryRotation('p', refreshToken({ id: 'x', tokenHash: 'x', parentId: 'p' }), t0 + 1, 5, 5)).toBe('revoked');
          expect(await store.rotateRefreshToken('p', refreshToken({ id: 's', tokenHash: 's', parentId: 'p' }), t0 + 1)).toBe(true);
          expect(await store.retryRotation('p', refreshToken({ id: 'r1', tokenHash: 'r1', parentId: 'p' }), t0 + 10, 2, 5)).toBe(true);
          expect(await store.retryRotation('p', refreshToken({ id: 'r2', tokenHash: 'r2', parentId: 'p' }), t0 + 20, 2, 5)).toBe(true);
          expect(await store.retryRotation('p', refreshToken({ id: 'r3', tokenHash: 'r3', parentId: 'p' }), t0 + 30, 2, 5)).toBe('limit');
          expect(await store.findRefreshToken('r3')).toBeUndefined();
          // s was superseded by the first retry: a dead branch.
          expect(await store.retryRotation('s', refreshToken({ id: 'sx', tokenHash: 'sx', parentId: 's' }), t0 + 30, 5, 5)).toBe('successor_used');
          expect(await store.rotateRefreshToken('r2', refreshToken({ id: 'r2b', tokenHash: 'r2b', parentId: 'r2' }), t0 + 31)).toBe(true);
          expect(await store.retryRotation('p', refreshToken({ id: 'r4', tokenHash: 'r4', parentId: 'p' }), t0 + 32, 9, 5)).toBe('successor_used');
          expect(await store.retryRotation('r1', refreshToken({ id: 'r1b', tokenHash: 'r1b', parentId: 'r1' }), t0 + 32, 9, 5)).toBe('successor_used');
          await store.revokeRefreshFamily('family-1', t0 + 40);
          expect(await store.retryRotation('r2', refreshToken({ id: 'r2c', tokenHash: 'r2c', parentId: 'r2' }), t0 + 41, 9, 5)).toBe('revoked');
        });
      });

      it('retryRotation keeps the successors of a retry racing it (younger than raceSeconds) beside its own: each goes on', async () => {
        await withSeededStore(async (store) => {
          await store.createRefreshToken(refreshToken({ id: 'p', tokenHash: 'p' }));
          expect(await store.rotateRefreshToken('p', refreshToken({ id: 'lost', tokenHash: 'lost', parentId: 'p', accessTokenJti: 'jti-lost' }), t0 + 1)).toBe(
            true,
          );
          expect(
            await store.retryRotation(
              'p',
              refreshToken({ id: 'r1', tokenHash: 'r1', parentId: 'p', createdAt: t0 + 30, accessTokenJti: 'jti-r1' }),
              t0 + 30,
              5,
              5,
            ),
          ).toBe(true);
          expect(
            await store.retryRotation(
              'p',
              refreshToken({ id: 'r2', tokenHash: 'r2', parentId: 'p', createdAt: t0 + 31, accessTokenJti: 'jti-r2' }),
              t0 + 31,
              5,
              5,
            ),
          ).toBe(true);
          expect((await store.findRefreshToken('lost'))?.supersededAt).toBe(t0 + 30);
          expect((await store.findRefreshToken('r1'))?.supersededAt).toBeUndefined();
          expect(await store.isAccessTokenRevoked('jti-r1')).toBe(false);
          expect(await store.rotateRefreshToken('r2', refreshToken({ id: 'r2b', tokenHash: 'r2b', parentId: 'r2' }), t0 + 32)).toBe(true);
          expect(await store.rotateRefreshToken('r1', refreshToken({ id: 'r1b', tokenHash: 'r1b', parentId: 'r1' }), t0 + 33)).toBe(true);
          expect(await store.isAccessTokenRevoked('jti-r1')).toBe(false);
        });
      });

      it('recoverDeviceGrant puts a new token in the place of the unused lost one, in its family, and revokes the lost access token; within the window, the gap and the limit', async () => {
        await withSeededStore(async (store) => {
          await store.createDeviceGrant(deviceGrant());
          expect(await store.approveDeviceGrant('grant-1', 'user-alice', t0 + 10, ['pwd'], t0 + 10)).toBe(true);
          const guard = { userTokensRevokedAt: undefined };
          const rt = refreshToken({ id: 'lost', tokenHash: 'lost', familyId: 'lost-family', accessTokenJti: 'jti-lost', familyExpiresAt: t0 + 1000 });
          expect((await store.redeemDeviceGrant('grant-1', t0 + 20, { token: rt, guard }, { accessTokenJti: 'jti-lost' }))?.grant.issuedAt).toBe(t0 + 20);
          // The replacement as the grant makes it: a token of the grant's family, not yet placed.
          const replacement = refreshToken({ id: 'new', tokenHash: 'new', familyId: 'lost-family', accessTokenJti: 'jti-new', createdAt: t0 + 40 });
          const bounds = (now: number, since = t0 + 10) => ({ since, now, minGapSeconds: 5, limit: 3, dpopJkt: undefined });
          expect(
            await store.recoverDeviceGrant('grant-1', bounds(t0 + 40, t0 + 30), { accessTokenJti: 'jti-new', refresh: { token: replacement, guard } }),
          ).toBe('too_late');
          expect(await store.recoverDeviceGrant('grant-1', bounds(t0 + 22), { accessTokenJti: 'jti-new', refresh: { token: replacement, guard } })).toBe(
            'too_soon',
          );
          const recovered = await store.recoverDeviceGrant('grant-1', bounds(t0 + 40), { accessTokenJti: 'jti-new', refresh: { token: replacement, guard } });
          expect(recovered).toMatchObject({
            grant: { id: 'grant-1', status: 'consumed', accessTokenJti: 'jti-new', refreshFamilyId: 'lost-family', issuedAt: t0 + 40, recoveries: 1 },
            refreshTokenStored: true,
          });
          expect(await store.findRefreshToken('new')).toEqual({ ...replacement, parentId: 'lost', familyExpiresAt: t0 + 1000, expiresAt: t0 + 1000 });
          expect((await store.findRefreshToken('lost'))?.supersededAt).toBe(t0 + 40);
          expect(await store.isRefreshFamilyRevoked('lost-family')).toBe(false);
          expect(await store.isAccessTokenRevoked('jti-lost')).toBe(true);
          expect(await store.isAccessTokenRevoked('jti-new')).toBe(false);
          // A recovery racing that one: refused, it takes nothing away.
          expect(await store.recoverDeviceGrant('grant-1', bounds(t0 + 41), { accessTokenJti: 'jti-x' })).toBe('too_soon');
          expect(await store.isAccessTokenRevoked('jti-new')).toBe(false);
          // The replacement used: whoever holds the family now is not a device that lost its answer.
          expect(
            await store.rotateRefreshToken('new', refreshToken({ id: 'new2', tokenHash: 'new2', familyId: 'lost-family', parentId: 'new' }), t0 + 55),
          ).toBe(true);
          expect(await store.recoverDeviceGrant('grant-1', bounds(t0 + 60), { accessTokenJti: 'jti-4' })).toBe('used');
          expect(await store.isRefreshFamilyRevoked('lost-family')).toBe(false);
        });
      });

      it('recoverDeviceGrant is limited, and refuses a grant not redeemed with tokens', async () => {
        await withSeededStore(async (store) => {
          await store.createDeviceGrant(deviceGrant());
          const bounds = (now: number, limit = 3) => ({ since: t0, now, minGapSeconds: 5, limit, dpopJkt: undefined });
          expect(await store.recoverDeviceGrant('grant-1', bounds(t0 + 40), { accessTokenJti: 'j' })).toBe('not_redeemed');
          expect(await store.approveDeviceGrant('grant-1', 'user-alice', t0 + 10, ['pwd'], t0 + 10)).toBe(true);
          // Spent without tokens (the roles allowed nothing): nothing to recover.
          expect(await store.consumeDeviceGrant('grant-1', t0 + 20)).toBeDefined();
          expect(await store.recoverDeviceGrant('grant-1', bounds(t0 + 40), { accessTokenJti: 'j' })).toBe('not_redeemed');
          expect(await store.recoverDeviceGrant('unknown', bounds(t0 + 40), { accessTokenJti: 'j' })).toBe('not_redeemed');
          // Redeemed without a refresh token: the access token alone is replaced, at most `limit` times.
          await store.createDeviceGrant(deviceGrant({ id: 'g2' }));
          expect(await store.approveDeviceGrant('g2', 'user-alice', t0 + 10, ['pwd'], t0 + 10)).toBe(true);
          expect((await store.redeemDeviceGrant('g2', t0 + 20, undefined, { accessTokenJti: 'jti-a' }))?.grant.accessTokenJti).toBe('jti-a');
          expect(await store.recoverDeviceGrant('g2', bounds(t0 + 30, 1), { accessTokenJti: 'jti-b' })).toMatchObject({
            grant: { accessTokenJti: 'jti-b', recoveries: 1 },
            refreshTokenStored: false,
          });
          expect(await store.isAccessTokenRevoked('jti-a')).toBe(true);
          expect(await store.recoverDeviceGrant('g2', bounds(t0 + 40, 1), { accessTokenJti: 'jti-c' })).toBe('limit');
        });
      });

      it('recoverDeviceGrant of a redemption answered to a DPoP proof needs a proof by the same key: another key or none is wrong_key and changes nothing', async () => {
        await withSeededStore(async (store) => {
          const guard = { userTokensRevokedAt: undefined };
          const bounds = (now: number, dpopJkt: string | undefined) => ({ since: t0, now, minGapSeconds: 5, limit: 3, dpopJkt });
          // With a refresh token (the family's lost token stays in place) and without one.
          await store.createDeviceGrant(deviceGrant());
          expect(await store.approveDeviceGrant('grant-1', 'user-alice', t0 + 10, ['pwd'], t0 + 10)).toBe(true);
          const rt = refreshToken({ id: 'lost', tokenHash: 'lost', familyId: 'bound-family', accessTokenJti: 'jti-lost', dpopJkt: 'jkt-device' });
          const redeemed = await store.redeemDeviceGrant('grant-1', t0 + 20, { token: rt, guard }, { accessTokenJti: 'jti-lost', dpopJkt: 'jkt-device' });
          expect(redeemed?.grant.dpopJkt).toBe('jkt-device');
          await store.createDeviceGrant(deviceGrant({ id: 'g2' }));
          expect(await store.approveDeviceGrant('g2', 'user-alice', t0 + 10, ['pwd'], t0 + 10)).toBe(true);
          expect((await store.redeemDeviceGrant('g2', t0 + 20, undefined, { accessTokenJti: 'jti-g2', dpopJkt: 'jkt-device' }))?.grant.dpopJkt).toBe(
            'jkt-device',
          );
          for (const other of [undefined, 'jkt-someone-else']) {
            const replacement = refreshToken({ id: `new-${other}`, tokenHash: `new-${other}`, familyId: 'bound-family', createdAt: t0 + 30 });
            expect(await store.recoverDeviceGrant('grant-1', bounds(t0 + 30, other), { accessTokenJti: 'jti-x', refresh: { token: replacement, guard } })).toBe(
              'wrong_key',
            );
            expect(await store.findRefreshToken(`new-${other}`)).toBeUndefined();
            expect(await store.recoverDeviceGrant('g2', bounds(t0 + 30, other), { accessTokenJti: 'jti-y' })).toBe('wrong_key');
          }
          expect(await store.findRefreshToken('lost')).toEqual(rt);
          expect(await store.isAccessTokenRevoked('jti-lost')).toBe(false);
          expect(await store.isAccessTokenRevoked('jti-g2')).toBe(false);
          expect(await store.findDeviceGrantByDeviceCode('device-grant-1')).toMatchObject({ accessTokenJti: 'jti-lost', recoveries: 0 });
          // The device's own key recovers.
          const own = refreshToken({ id: 'own', tokenHash: 'own', familyId: 'bound-family', createdAt: t0 + 31, dpopJkt: 'jkt-device' });
          expect(
            await store.recoverDeviceGrant('grant-1', bounds(t0 + 31, 'jkt-device'), { accessTokenJti: 'jti-own', refresh: { token: own, guard } }),
          ).toMatchObject({
            grant: { accessTokenJti: 'jti-own', recoveries: 1, dpopJkt: 'jkt-device' },
            refreshTokenStored: true,
          });
          expect(await store.recoverDeviceGrant('g2', bounds(t0 + 31, 'jkt-device'), { accessTokenJti: 'jti-g2b' })).toMatchObject({
            grant: { recoveries: 1 },
          });
        });
      });

      it('refresh tokens round-trip every field', async () => {
        await withSeededStore(async (store) => {
          const parented = refreshToken({ id: 'child', tokenHash: 'child', parentId: 'rt-0', supersededAt: t0 + 2 });
          await store.createRefreshToken(parented);
          expect(await store.findRefreshToken('child')).toStrictEqual(parented);
          const t = refreshToken({ rotatedAt: t0 + 3, revokedAt: t0 + 4 });
          await store.createRefreshToken(t);
          expect(await store.findRefreshToken(t.tokenHash)).toStrictEqual(t);
        });
      });

      it('a DPoP-bound family keeps its key (dpopJkt) through rotation and grace successors', async () => {
        await withSeededStore(async (store) => {
          const jkt = 'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs';
          const bound = refreshToken({ id: 'bound', tokenHash: 'bound', familyId: 'family-b', dpopJkt: jkt });
          await store.createRefreshToken(bound);
          expect(await store.findRefreshToken('bound')).toStrictEqual(bound);
          const successor = refreshToken({ id: 'bound-2', tokenHash: 'bound-2', familyId: 'family-b', parentId: 'bound', dpopJkt: jkt });
          expect(await store.rotateRefreshToken('bound', successor, t0 + 1)).toBe(true);
          expect((await store.findRefreshToken('bound-2'))?.dpopJkt).toBe(jkt);
          const grace = refreshToken({ id: 'bound-3', tokenHash: 'bound-3', familyId: 'family-b', parentId: 'bound', dpopJkt: jkt });
          expect(await store.addGraceSuccessor('bound', grace, { limit: 5, liveBranches: 5, now: t0 + 1 })).toBe(true);
          expect((await store.findRefreshToken('bound-3'))?.dpopJkt).toBe(jkt);
        });
      });
    });

    describe('revoked families and housekeeping', () => {
      it('a token inserted into a family after its revocation is born revoked', async () => {
        await withSeededStore(async (store) => {
          await store.revokeRefreshFamily('family-1', t0 + 5);
          await store.createRefreshToken(refreshToken({ id: 'late', tokenHash: 'late' }));
          expect((await store.findRefreshToken('late'))?.revokedAt).toBe(t0 + 5);
          await store.createRefreshToken(refreshToken({ id: 'elsewhere', tokenHash: 'elsewhere', familyId: 'family-2' }));
          expect((await store.findRefreshToken('elsewhere'))?.revokedAt).toBeUndefined();
        });
      });

      it('purgeExpired removes what can no longer matter and keeps the rest', async () => {
        await withSeededStore(async (store) => {
          const day = 86400;
          await store.createSession(session({ idHash: 'old-session', expiresAt: t0 }));
          await store.createSession(session({ idHash: 'live-session', expiresAt: t0 + 60 }));
          await store.createDeviceGrant(deviceGrant({ id: 'old-grant', expiresAt: t0 - day }));
          await store.createDeviceGrant(deviceGrant({ id: 'recent-grant', expiresAt: t0 - day + 1 }));
          // Live but idle past its expiry: gone. Rotated, idle-expired, family still running: kept (a replay is theft).
          await store.createRefreshToken(refreshToken({ id: 'old-rt', tokenHash: 'old-rt', familyId: 'old-family', expiresAt: t0 - day }));
          await store.createRefreshToken(
            refreshToken({ id: 'rotated-rt', tokenHash: 'rotated-rt', familyId: 'f2', expiresAt: t0 - day, rotatedAt: t0 - 2 * day }),
          );
          await store.createRefreshToken(
            refreshToken({ id: 'ended-rt', tokenHash: 'ended-rt', familyId: 'f3', rotatedAt: t0 - 3 * day, familyExpiresAt: t0 - day }),
          );
          await store.createRefreshToken(refreshToken({ id: 'live-rt', tokenHash: 'live-rt', familyId: 'live-family' }));
          await store.revokeRefreshFamily('ancient-family', t0 - 367 * day);
          await store.revokeRefreshFamily('recent-family', t0 - 2 * day);
          await store.revokeAccessToken('expired-jti', t0);
          await store.revokeAccessToken('live-jti', t0 + 60);
          await store.createClient(client({ clientId: 'removed-long-ago' }));
          await store.removeClient('removed-long-ago', t0 - 367 * day);
          await store.createClient(client({ clientId: 'removed-lately' }));
          await store.removeClient('removed-lately', t0 - 2 * day);

          const counts = await store.purgeExpired(t0);
          expect(counts).toEqual({
            authorizationCodes: 0,
            deviceGrants: 1,
            sessions: 1,
            refreshTokens: 2,
            revokedAccessTokens: 1,
            emailTokens: 0,
            usedOnce: 0,
            registrationTokens: 0,
            pushedRequests: 0,
          });
          expect(await store.findRefreshToken('rotated-rt')).toBeDefined();
          expect(await store.findRefreshToken('ended-rt')).toBeUndefined();
          // Revoked families are remembered for a year (access tokens of theirs are refused by it).
          expect(await store.isRefreshFamilyRevoked('recent-family')).toBe(true);
          expect(await store.isRefreshFamilyRevoked('ancient-family')).toBe(false);
          // A removal is remembered for a year too (the old client's tokens could still be live).
          await store.ensureClient(client({ clientId: 'removed-long-ago' }));
          await store.ensureClient(client({ clientId: 'removed-lately' }));
          expect((await store.findClient('removed-long-ago'))?.tokensRevokedAt).toBeUndefined();
          expect((await store.findClient('removed-lately'))?.tokensRevokedAt).toBe(t0 - 2 * day);
          expect(await store.findSession('live-session', t0)).toBeDefined();
          expect(await store.findDeviceGrantByDeviceCode('device-recent-grant')).toBeDefined();
          expect(await store.findDeviceGrantByDeviceCode('device-old-grant')).toBeUndefined();
          expect(await store.findRefreshToken('live-rt')).toBeDefined();
          expect(await store.findRefreshToken('old-rt')).toBeUndefined();
          expect(await store.isAccessTokenRevoked('live-jti')).toBe(true);
          expect(await store.isAccessTokenRevoked('expired-jti')).toBe(false);
        });
      });
    });

    describe('signing key rotation', () => {
      it('rotateSigningKey retires the active key and makes the new one active; the fingerprint changes', async () => {
        await withStore(async (store) => {
          await store.ensureSigningKey(signingKey('k1', t0));
          const before = await store.signingKeysFingerprint();
          expect(await store.signingKeysFingerprint()).toBe(before);
          await store.rotateSigningKeys([signingKey('k2', t0 + 100)], t0 + 100);
          const keys = await store.listSigningKeys();
          expect(keys.map((k) => [k.kid, k.retiredAt])).toEqual([
            ['k1', t0 + 100],
            ['k2', undefined],
          ]);
          expect(await store.signingKeysFingerprint()).not.toBe(before);
        });
      });

      it('rotateSigningKeys replaces every active key with the new ones, one per algorithm, in one step', async () => {
        await withStore(async (store) => {
          await store.ensureSigningKey(signingKey('rsa-1', t0));
          await store.ensureSigningKey(signingKey('ec-1', t0, 'ES256'));
          await store.rotateSigningKeys([signingKey('rsa-2', t0 + 50), signingKey('ec-2', t0 + 50, 'ES256')], t0 + 50);
          const keys = await store.listSigningKeys();
          expect(
            keys
              .filter((k) => k.retiredAt === undefined)
              .map((k) => k.kid)
              .sort(),
          ).toEqual(['ec-2', 'rsa-2']);
          expect(
            keys
              .filter((k) => k.retiredAt === t0 + 50)
              .map((k) => k.kid)
              .sort(),
          ).toEqual(['ec-1', 'rsa-1']);
        });
      });
    });

    describe('rate-limit counters', () => {
      it('countRateLimitEvent counts within a window and starts again once the window has ended', async () => {
        await withStore(async (store) => {
          expect(await store.readRateLimitCounter('b', 'k')).toBeUndefined();
          expect(await store.countRateLimitEvent('b', 'k', t0, 60)).toEqual({ count: 1, startedAt: t0, lastAt: t0 });
          expect(await store.countRateLimitEvent('b', 'k', t0 + 10.5, 60)).toEqual({ count: 2, startedAt: t0, lastAt: t0 + 10.5 });
          expect(await store.countRateLimitEvent('b', 'k', t0 + 59, 60)).toMatchObject({ count: 3, startedAt: t0 });
          expect(await store.countRateLimitEvent('b', 'k', t0 + 60, 60)).toEqual({ count: 1, startedAt: t0 + 60, lastAt: t0 + 60 });
          expect(await store.readRateLimitCounter('b', 'k')).toEqual({ count: 1, startedAt: t0 + 60, lastAt: t0 + 60 });
        });
      });

      it('buckets and keys count apart', async () => {
        await withStore(async (store) => {
          await store.countRateLimitEvent('b', 'k', t0, 60);
          await store.countRateLimitEvent('b', 'k', t0, 60);
          expect((await store.countRateLimitEvent('b', 'other', t0, 60)).count).toBe(1);
          expect((await store.countRateLimitEvent('other', 'k', t0, 60)).count).toBe(1);
        });
      });

      it('countRateLimitFailure keeps the time of the failure before the latest, and forgets an old run', async () => {
        await withStore(async (store) => {
          expect(await store.countRateLimitFailure('b', 'k', t0, 100)).toEqual({ count: 1, startedAt: t0, lastAt: t0 });
          expect(await store.countRateLimitFailure('b', 'k', t0 + 5, 100)).toEqual({ count: 2, startedAt: t0, lastAt: t0 + 5 });
          expect(await store.countRateLimitFailure('b', 'k', t0 + 50, 100)).toEqual({ count: 3, startedAt: t0 + 5, lastAt: t0 + 50 });
          expect(await store.countRateLimitFailure('b', 'k', t0 + 150, 100)).toEqual({ count: 1, startedAt: t0 + 150, lastAt: t0 + 150 });
        });
      });

      it('undo takes one back and removes a counter at zero; clear removes it', async () => {
        await withStore(async (store) => {
          await store.countRateLimitFailure('b', 'k', t0, 100);
          await store.countRateLimitFailure('b', 'k', t0 + 1, 100);
          await store.undoRateLimitEvent('b', 'k');
          expect((await store.readRateLimitCounter('b', 'k'))?.count).toBe(1);
          await store.undoRateLimitEvent('b', 'k');
          expect(await store.readRateLimitCounter('b', 'k')).toBeUndefined();
          await store.undoRateLimitEvent('b', 'missing');
          await store.countRateLimitFailure('b', 'back', t0, 100);
          await store.countRateLimitFailure('b', 'back', t0 + 7, 100);
          await store.undoRateLimitEvent('b', 'back', t0);
          expect(await store.readRateLimitCounter('b', 'back')).toMatchObject({ count: 1, lastAt: t0 });
          await store.countRateLimitEvent('b', 'k', t0, 60);
          await store.clearRateLimitCounter('b', 'k');
          expect(await store.readRateLimitCounter('b', 'k')).toBeUndefined();
        });
      });

      it('simultaneous events are each counted once', async () => {
        await withStore(async (store) => {
          const counts = await Promise.all(Array.from({ length: 20 }, () => store.countRateLimitEvent('b', 'k', t0, 60)));
          expect(counts.map((c) => c.count).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
        });
      });

      it('purgeExpired removes counters idle longer than any window or back-off', async () => {
        await withStore(async (store) => {
          await store.countRateLimitEvent('b', 'old', t0, 60);
          await store.countRateLimitEvent('b', 'recent', t0 + 1_000_000, 60);
          await store.purgeExpired(t0 + 1_100_000);
          expect(await store.readRateLimitCounter('b', 'old')).toBeUndefined();
          expect(await store.readRateLimitCounter('b', 'recent')).toBeDefined();
        });
      });
    });

    describe('revoked access tokens', () => {
      it('a jti is not revoked until revokeAccessToken, then it is; others stay unrevoked', async () => {
        await withStore(async (store) => {
          expect(await store.isAccessTokenRevoked('jti-1')).toBe(false);
          await store.revokeAccessToken('jti-1', t0 + 86400);
          expect(await store.isAccessTokenRevoked('jti-1')).toBe(true);
          expect(await store.isAccessTokenRevoked('jti-2')).toBe(false);
        });
      });

      it('revoking the same jti twice is harmless', async () => {
        await withStore(async (store) => {
          await store.revokeAccessToken('jti-1', t0 + 86400);
          await expect(store.revokeAccessToken('jti-1', t0 + 90000)).resolves.toBeUndefined();
          expect(await store.isAccessTokenRevoked('jti-1')).toBe(true);
        });
      });
    });

    describe('second factors', () => {
      /** alice (with client cli) and bob. */
      async function withTwoUsers(fn: (store: Store) => Promise<void>): Promise<void> {
        await withSeededStore(async (store) => {
          await store.createUser(user({ username: 'bob' }));
          await fn(store);
        });
      }

      describe('TOTP', () => {
        it('saves, finds with every field intact, replaces, and removes a TOTP', async () => {
          await withTwoUsers(async (store) => {
            expect(await store.findTotp('user-alice')).toBeUndefined();
            await store.saveTotp(totp());
            expect(await store.findTotp('user-alice')).toStrictEqual(totp());
            expect(await store.findTotp('user-bob')).toBeUndefined();
            // A new enrolment replaces the old app, and its replay mark with it.
            const next = totp({ secret: 'lk1.another-secret', lastStep: 0, createdAt: t0 + 50 });
            await store.saveTotp(next);
            expect(await store.findTotp('user-alice')).toStrictEqual(next);
            expect(await store.removeTotp('user-bob')).toBe(false);
            expect(await store.removeTotp('user-alice')).toBe(true);
            expect(await store.removeTotp('user-alice')).toBe(false);
            expect(await store.findTotp('user-alice')).toBeUndefined();
          });
        });

        it('useTotpStep accepts only a step later than the last one accepted (no replay, no older code)', async () => {
          await withTwoUsers(async (store) => {
            await store.saveTotp(totp({ lastStep: 1000 }));
            await store.saveTotp(totp({ userId: 'user-bob', lastStep: 1000 }));
            expect(await store.useTotpStep('user-alice', 1000)).toBe(false); // the step already used
            expect(await store.useTotpStep('user-alice', 999)).toBe(false); // an older one
            expect(await store.useTotpStep('user-alice', 1001)).toBe(true);
            expect(await store.useTotpStep('user-alice', 1001)).toBe(false); // the same code again
            expect(await store.useTotpStep('user-alice', 1000)).toBe(false); // the code before it, still in the window
            expect((await store.findTotp('user-alice'))?.lastStep).toBe(1001);
            expect(await store.useTotpStep('user-alice', 1003)).toBe(true); // a later one, skipping a step
            expect(await store.useTotpStep('user-alice', 1002)).toBe(false);
            expect(await store.findTotp('user-alice')).toStrictEqual(totp({ lastStep: 1003 }));
            // Each user's mark is their own.
            expect((await store.findTotp('user-bob'))?.lastStep).toBe(1000);
            expect(await store.useTotpStep('user-bob', 1001)).toBe(true);
            // No TOTP, no step.
            expect(await store.useTotpStep('user-nobody', 5000)).toBe(false);
            await store.removeTotp('user-alice');
            expect(await store.useTotpStep('user-alice', 5000)).toBe(false);
          });
        });

        it('simultaneous uses of the same code: exactly one is accepted', async () => {
          await withSeededStore(async (store) => {
            await store.saveTotp(totp({ lastStep: 1000 }));
            const results = await Promise.all(Array.from({ length: 10 }, () => store.useTotpStep('user-alice', 1001)));
            expect(results.filter((accepted) => accepted)).toHaveLength(1);
            expect((await store.findTotp('user-alice'))?.lastStep).toBe(1001);
          });
        });

        it('resealSecrets covers TOTP secrets, with context totp:<userId>, and leaves the rest of the row alone', async () => {
          await withTwoUsers(async (store) => {
            await store.saveTotp(totp({ secret: 'old-sealed', lastStep: 77 }));
            await store.saveTotp(totp({ userId: 'user-bob', secret: 'sealed:already' }));
            const contexts: string[] = [];
            const changed = await store.resealSecrets(({ context, value }) => {
              contexts.push(context);
              return value.startsWith('sealed:') ? value : `re:${value}`;
            });
            expect(changed).toBe(1);
            expect(contexts.sort()).toEqual(['totp:user-alice', 'totp:user-bob']);
            expect(await store.findTotp('user-alice')).toStrictEqual(totp({ secret: 're:old-sealed', lastStep: 77 }));
            expect((await store.findTotp('user-bob'))?.secret).toBe('sealed:already');
          });
        });

        it('resealSecrets changes no TOTP secret when the function throws half way', async () => {
          await withSeededStore(async (store) => {
            await store.serverSecret('csrf', () => 'csrf-value');
            await store.saveTotp(totp({ secret: 'old-sealed' }));
            await expect(
              store.resealSecrets(({ context, value }) => {
                if (context.startsWith('totp:')) throw new Error('no key');
                return `changed:${value}`;
              }),
            ).rejects.toThrow('no key');
            expect(await store.serverSecret('csrf', () => 'x')).toBe('csrf-value');
            expect((await store.findTotp('user-alice'))?.secret).toBe('old-sealed');
          });
        });
      });

      describe('passkeys', () => {
        it('creates and finds a passkey with every field intact', async () => {
          await withSeededStore(async (store) => {
            const p = passkey();
            await store.createPasskey(p);
            expect(await store.findPasskey(p.id)).toStrictEqual(p);
            const q = passkey({ id: 'second', transports: [], backedUp: false, counter: 4_294_967_295, lastUsedAt: t0 + 5 });
            await store.createPasskey(q);
            expect(await store.findPasskey('second')).toStrictEqual(q);
            expect(await store.findPasskey('unknown')).toBeUndefined();
            // Credential ids are base64url: case matters.
            expect(await store.findPasskey(p.id.toLowerCase())).toBeUndefined();
          });
        });

        it('refuses a credential id registered already, to the same user or another, with DuplicateError, and keeps the first', async () => {
          await withTwoUsers(async (store) => {
            await store.createPasskey(passkey({ id: 'cred-1', name: 'First' }));
            await expect(store.createPasskey(passkey({ id: 'cred-1', name: 'Again' }))).rejects.toBeInstanceOf(DuplicateError);
            await expect(store.createPasskey(passkey({ id: 'cred-1', userId: 'user-bob', name: 'Taken over' }))).rejects.toBeInstanceOf(DuplicateError);
            expect(await store.findPasskey('cred-1')).toStrictEqual(passkey({ id: 'cred-1', name: 'First' }));
            expect(await store.listPasskeys('user-bob')).toEqual([]);
            // An id differing only in case is another credential.
            await store.createPasskey(passkey({ id: 'CRED-1', userId: 'user-bob' }));
            expect((await store.findPasskey('CRED-1'))?.userId).toBe('user-bob');
          });
        });

        it("lists a user's passkeys oldest first (createdAt, then id), and no one else's", async () => {
          await withTwoUsers(async (store) => {
            expect(await store.listPasskeys('user-alice')).toEqual([]);
            await store.createPasskey(passkey({ id: 'p-b', createdAt: t0 + 1 }));
            await store.createPasskey(passkey({ id: 'p-c', createdAt: t0 }));
            await store.createPasskey(passkey({ id: 'p-a', createdAt: t0 + 1 }));
            await store.createPasskey(passkey({ id: 'p-B', createdAt: t0 + 1 }));
            await store.createPasskey(passkey({ id: 'bob-1', userId: 'user-bob', createdAt: t0 - 10 }));
            const list = await store.listPasskeys('user-alice');
            expect(list.map((p) => p.id)).toEqual(['p-c', 'p-B', 'p-a', 'p-b']);
            expect(list[0]).toStrictEqual(passkey({ id: 'p-c', createdAt: t0 }));
            expect((await store.listPasskeys('user-bob')).map((p) => p.id)).toEqual(['bob-1']);
            expect(await store.listPasskeys('user-nobody')).toEqual([]);
          });
        });

        it('recordPasskeyUse stores the counter and the time, only forward; false when the passkey is gone', async () => {
          await withSeededStore(async (store) => {
            await store.createPasskey(passkey({ counter: 3 }));
            expect(await store.recordPasskeyUse(passkey().id, 7, t0 + 100)).toBe(true);
            expect(await store.findPasskey(passkey().id)).toStrictEqual(passkey({ counter: 7, lastUsedAt: t0 + 100 }));
            // Two assertions verified in parallel against 7: the later-numbered one got there first.
            expect(await store.recordPasskeyUse(passkey().id, 9, t0 + 150)).toBe(true);
            expect(await store.recordPasskeyUse(passkey().id, 8, t0 + 150)).toBe(false);
            expect(await store.recordPasskeyUse(passkey().id, 9, t0 + 150)).toBe(false);
            expect(await store.recordPasskeyUse(passkey().id, 0, t0 + 150)).toBe(false);
            expect(await store.findPasskey(passkey().id)).toStrictEqual(passkey({ counter: 9, lastUsedAt: t0 + 150 }));
            // Authenticators that keep no counter report 0 every time.
            await store.removePasskey('user-alice', passkey().id);
            await store.createPasskey(passkey({ counter: 0 }));
            expect(await store.recordPasskeyUse(passkey().id, 0, t0 + 200)).toBe(true);
            expect(await store.recordPasskeyUse(passkey().id, 0, t0 + 250)).toBe(true);
            expect(await store.findPasskey(passkey().id)).toStrictEqual(passkey({ counter: 0, lastUsedAt: t0 + 250 }));
            expect(await store.recordPasskeyUse('unknown', 1, t0)).toBe(false);
            await store.removePasskey('user-alice', passkey().id);
            expect(await store.recordPasskeyUse(passkey().id, 8, t0 + 300)).toBe(false);
          });
        });

        it("rename and remove touch only the owner's passkey: another user's id is false and stays as it was", async () => {
          await withTwoUsers(async (store) => {
            await store.createPasskey(passkey({ id: 'alice-key' }));
            await store.createPasskey(passkey({ id: 'bob-key', userId: 'user-bob', name: "Bob's key" }));
            expect(await store.renamePasskey('user-alice', 'bob-key', 'Stolen')).toBe(false);
            expect(await store.removePasskey('user-alice', 'bob-key')).toBe(false);
            expect(await store.findPasskey('bob-key')).toStrictEqual(passkey({ id: 'bob-key', userId: 'user-bob', name: "Bob's key" }));
            expect(await store.renamePasskey('user-alice', 'unknown', 'x')).toBe(false);

            expect(await store.renamePasskey('user-alice', 'alice-key', 'YubiKey 5C')).toBe(true);
            expect(await store.findPasskey('alice-key')).toStrictEqual(passkey({ id: 'alice-key', name: 'YubiKey 5C' }));
            expect(await store.removePasskey('user-alice', 'alice-key')).toBe(true);
            expect(await store.removePasskey('user-alice', 'alice-key')).toBe(false);
            expect(await store.findPasskey('alice-key')).toBeUndefined();
            expect(await store.renamePasskey('user-alice', 'alice-key', 'Gone')).toBe(false);
            expect((await store.listPasskeys('user-bob')).map((p) => p.id)).toEqual(['bob-key']);
          });
        });
      });

      describe('recovery codes', () => {
        it('each code is spent once; the count is of the unused ones; another user cannot spend them', async () => {
          await withTwoUsers(async (store) => {
            expect(await store.countRecoveryCodes('user-alice')).toBe(0);
            expect(await store.useRecoveryCode('user-alice', 'h1', t0)).toBe(false);
            await store.replaceRecoveryCodes('user-alice', ['h1', 'h2', 'h3'], t0);
            expect(await store.countRecoveryCodes('user-alice')).toBe(3);
            expect(await store.useRecoveryCode('user-bob', 'h2', t0 + 1)).toBe(false);
            expect(await store.useRecoveryCode('user-alice', 'h2', t0 + 1)).toBe(true);
            expect(await store.useRecoveryCode('user-alice', 'h2', t0 + 2)).toBe(false);
            expect(await store.useRecoveryCode('user-alice', 'unknown', t0 + 2)).toBe(false);
            expect(await store.countRecoveryCodes('user-alice')).toBe(2);
            expect(await store.countRecoveryCodes('user-bob')).toBe(0);
            expect(await store.useRecoveryCode('user-alice', 'h1', t0 + 3)).toBe(true);
            expect(await store.useRecoveryCode('user-alice', 'h3', t0 + 3)).toBe(true);
            expect(await store.countRecoveryCodes('user-alice')).toBe(0);
          });
        });

        it("replaceRecoveryCodes replaces every code of the user, used or not, and no one else's", async () => {
          await withTwoUsers(async (store) => {
            await store.replaceRecoveryCodes('user-alice', ['h1', 'h2'], t0);
            await store.replaceRecoveryCodes('user-bob', ['h1', 'b2'], t0);
            expect(await store.useRecoveryCode('user-alice', 'h1', t0 + 1)).toBe(true);
            await store.replaceRecoveryCodes('user-alice', ['h3', 'h4', 'h5', 'h1'], t0 + 10);
            expect(await store.countRecoveryCodes('user-alice')).toBe(4);
            expect(await store.useRecoveryCode('user-alice', 'h2', t0 + 11)).toBe(false); // an old code is gone
            expect(await store.useRecoveryCode('user-alice', 'h4', t0 + 11)).toBe(true);
            expect(await store.useRecoveryCode('user-alice', 'h1', t0 + 11)).toBe(true); // a new code, whatever it was before
            expect(await store.countRecoveryCodes('user-alice')).toBe(2);
            expect(await store.countRecoveryCodes('user-bob')).toBe(2);
            expect(await store.useRecoveryCode('user-bob', 'h1', t0 + 12)).toBe(true);
            // A digest given twice is one code.
            await store.replaceRecoveryCodes('user-alice', ['d', 'd'], t0 + 20);
            expect(await store.countRecoveryCodes('user-alice')).toBe(1);
            await store.replaceRecoveryCodes('user-alice', [], t0 + 30);
            expect(await store.countRecoveryCodes('user-alice')).toBe(0);
            expect(await store.useRecoveryCode('user-alice', 'd', t0 + 31)).toBe(false);
          });
        });

        it('simultaneous uses of the same code: exactly one is accepted', async () => {
          await withSeededStore(async (store) => {
            await store.replaceRecoveryCodes('user-alice', ['h1', 'h2'], t0);
            const results = await Promise.all(Array.from({ length: 10 }, (_, n) => store.useRecoveryCode('user-alice', 'h1', t0 + n)));
            expect(results.filter((accepted) => accepted)).toHaveLength(1);
            expect(await store.countRecoveryCodes('user-alice')).toBe(1);
          });
        });

        it('simultaneous replacements leave exactly one of the new sets', async () => {
          await withSeededStore(async (store) => {
            const sets = Array.from({ length: 5 }, (_, n) => Array.from({ length: 10 }, (_, i) => `set-${n}-code-${i}`));
            await Promise.all(sets.map((set, n) => store.replaceRecoveryCodes('user-alice', set, t0 + n)));
            expect(await store.countRecoveryCodes('user-alice')).toBe(10);
            const survivors = await Promise.all(sets.map((set) => store.useRecoveryCode('user-alice', set[0]!, t0 + 10)));
            expect(survivors.filter((found) => found)).toHaveLength(1);
          });
        });
      });

      describe('resetSecondFactors', () => {
        it("removes the user's TOTP, passkeys and recovery codes in one step, and nobody else's", async () => {
          await withTwoUsers(async (store) => {
            await store.saveTotp(totp());
            await store.createPasskey(passkey({ id: 'a1' }));
            await store.createPasskey(passkey({ id: 'a2' }));
            await store.replaceRecoveryCodes('user-alice', ['h1', 'h2'], t0);
            await store.saveTotp(totp({ userId: 'user-bob' }));
            await store.createPasskey(passkey({ id: 'b1', userId: 'user-bob' }));
            await store.replaceRecoveryCodes('user-bob', ['h1'], t0);

            expect(await store.resetSecondFactors('user-alice')).toBe(true);
            expect(await store.findTotp('user-alice')).toBeUndefined();
            expect(await store.listPasskeys('user-alice')).toEqual([]);
            expect(await store.findPasskey('a1')).toBeUndefined();
            expect(await store.countRecoveryCodes('user-alice')).toBe(0);
            expect(await store.useRecoveryCode('user-alice', 'h1', t0 + 1)).toBe(false);
            expect(await store.resetSecondFactors('user-alice')).toBe(false);

            expect(await store.findTotp('user-bob')).toStrictEqual(totp({ userId: 'user-bob' }));
            expect((await store.listPasskeys('user-bob')).map((p) => p.id)).toEqual(['b1']);
            expect(await store.countRecoveryCodes('user-bob')).toBe(1);
          });
        });

        it('is true when there was any one kind, even only spent recovery codes; false for a user with none', async () => {
          await withTwoUsers(async (store) => {
            expect(await store.resetSecondFactors('user-alice')).toBe(false);
            expect(await store.resetSecondFactors('user-nobody')).toBe(false);
            await store.createPasskey(passkey());
            expect(await store.resetSecondFactors('user-alice')).toBe(true);
            await store.saveTotp(totp());
            expect(await store.resetSecondFactors('user-alice')).toBe(true);
            await store.replaceRecoveryCodes('user-alice', ['h1'], t0);
            expect(await store.useRecoveryCode('user-alice', 'h1', t0)).toBe(true);
            expect(await store.resetSecondFactors('user-alice')).toBe(true);
            expect(await store.resetSecondFactors('user-alice')).toBe(false);
          });
        });
      });

      describe('how a person signed in (amr) travels with what the sign-in leads to', () => {
        it('sessions keep their amr, in order; an empty one stays empty', async () => {
          await withSeededStore(async (store) => {
            const s = session({ amr: ['pwd', 'otp'] });
            await store.createSession(s);
            expect(await store.findSession('session-hash-1', t0)).toStrictEqual(s);
            const passkeySession = session({ idHash: 'passkey', amr: ['hwk', 'user'] });
            await store.createSession(passkeySession, { userTokensRevokedAt: undefined });
            expect(await store.findSession('passkey', t0)).toStrictEqual(passkeySession);
            await store.createSession(session({ idHash: 'none', amr: [] }));
            expect((await store.findSession('none', t0))?.amr).toEqual([]);
          });
        });

        it('authorization codes keep their amr, and so does the consumed code', async () => {
          await withSeededStore(async (store) => {
            const c = authorizationCode({ amr: ['fed', 'otp'] });
            await store.createAuthorizationCode(c);
            expect(await store.findAuthorizationCode('code-hash-1')).toStrictEqual(c);
            const consumed = await store.consumeAuthorizationCode('code-hash-1', t0 + 1, { accessTokenJti: 'j', refreshFamilyId: 'f' });
            expect(consumed?.amr).toEqual(['fed', 'otp']);
            await store.createAuthorizationCode(authorizationCode({ codeHash: 'empty', amr: [] }));
            expect((await store.findAuthorizationCode('empty'))?.amr).toEqual([]);
          });
        });

        it('refresh tokens keep their amr, and so do a rotated successor and a grace successor', async () => {
          await withSeededStore(async (store) => {
            const amr = ['pwd', 'hwk'] as const;
            const first = refreshToken({ id: 'p', tokenHash: 'p', amr: [...amr] });
            await store.createRefreshToken(first);
            expect(await store.findRefreshToken('p')).toStrictEqual(first);
            const next = refreshToken({ id: 'n', tokenHash: 'n', parentId: 'p', amr: [...amr], createdAt: t0 + 1 });
            expect(await store.rotateRefreshToken('p', next, t0 + 1)).toBe(true);
            expect(await store.findRefreshToken('n')).toStrictEqual(next);
            const grace = refreshToken({ id: 'g', tokenHash: 'g', parentId: 'p', amr: [...amr], createdAt: t0 + 2 });
            expect(await store.addGraceSuccessor('p', grace, { limit: 2, liveBranches: 5, now: t0 + 2 })).toBe(true);
            expect(await store.findRefreshToken('g')).toStrictEqual(grace);
            await store.createRefreshToken(refreshToken({ id: 'e', tokenHash: 'e', familyId: 'other', amr: [] }));
            expect((await store.findRefreshToken('e'))?.amr).toEqual([]);
          });
        });

        it('device grants: [] and the acr_values asked for until approved; approval records the amr, and consumption returns it', async () => {
          await withSeededStore(async (store) => {
            const g = deviceGrant({ acrValues: 'urn:latchkey:mfa' });
            await store.createDeviceGrant(g);
            expect(await store.findDeviceGrantByDeviceCode('device-grant-1')).toStrictEqual(g);
            const polled = await store.pollDeviceGrant('device-grant-1', 'cli', t0 * 1000, (before) => before.interval);
            expect(polled).toStrictEqual(g);
            expect(await store.approveDeviceGrant('grant-1', 'user-alice', t0 + 5, ['pwd', 'otp'], t0 + 10)).toBe(true);
            const consumed = await store.consumeDeviceGrant('grant-1', t0 + 20);
            expect(consumed?.amr).toEqual(['pwd', 'otp']);
            expect(consumed?.acrValues).toBe('urn:latchkey:mfa');
            // A refused approval records nothing.
            await store.createDeviceGrant(deviceGrant({ id: 'denied' }));
            await store.denyDeviceGrant('denied', t0 + 1);
            expect(await store.approveDeviceGrant('denied', 'user-alice', t0, ['hwk'], t0 + 2)).toBe(false);
            expect((await store.findDeviceGrantByDeviceCode('device-denied'))?.amr).toEqual([]);
          });
        });
      });
    });

    describe('accounts people control', () => {
      const day = 86400;
      /** A live family as listRefreshFamilies shows it, with the refreshToken() fixture's defaults. */
      const summary = (familyId: string, overrides: Partial<RefreshFamilySummary> = {}): RefreshFamilySummary => ({
        familyId,
        userId: 'user-alice',
        clientId: 'cli',
        scope: 'openid offline_access',
        audience: 'https://api.example.com',
        createdAt: t0,
        lastUsedAt: t0,
        expiresAt: t0 + 14 * day,
        approvedIp: '203.0.113.9',
        approvedUserAgent: 'latchkey-cli/0.1',
        sessionId: undefined,
        ...overrides,
      });

      describe('sessions', () => {
        it('round-trip their public id, address, User-Agent and last-seen time, or none; a public id is unique', async () => {
          await withSeededStore(async (store) => {
            const full = session({ ip: '2001:db8::1', userAgent: 'curl/8.5.0', lastSeenAt: t0 + 7, interactionId: 'interaction-1' });
            await store.createSession(full);
            expect(await store.findSession(full.idHash, t0)).toStrictEqual(full);
            const bare = session({ idHash: 'bare', ip: undefined, userAgent: undefined, lastSeenAt: undefined });
            await store.createSession(bare, { userTokensRevokedAt: undefined });
            expect(await store.findSession('bare', t0)).toStrictEqual(bare);
            await expect(store.createSession(session({ idHash: 'other', id: full.id }))).rejects.toThrow();
            expect(await store.findSession('other', t0)).toBeUndefined();
          });
        });

        it('listSessions: the unexpired sessions of one user, or of everyone, newest first (createdAt, then id)', async () => {
          await withSeededStore(async (store) => {
            await store.createUser(user({ username: 'bob' }));
            const a1 = session({ idHash: 'a1', createdAt: t0 });
            const a2 = session({ idHash: 'a2', createdAt: t0 + 10, id: 'sid-b' });
            const a3 = session({ idHash: 'a3', createdAt: t0 + 10, id: 'sid-a' });
            const ending = session({ idHash: 'ending', createdAt: t0 + 20, expiresAt: t0 + 30 });
            const b1 = session({ idHash: 'b1', userId: 'user-bob', createdAt: t0 + 5 });
            for (const s of [a1, a2, a3, ending, b1]) await store.createSession(s);
            expect(await store.listSessions('user-alice', t0 + 29)).toStrictEqual([ending, a3, a2, a1]);
            expect(await store.listSessions('user-alice', t0 + 30)).toStrictEqual([a3, a2, a1]);
            expect(await store.listSessions(undefined, t0 + 30)).toStrictEqual([a3, a2, b1, a1]);
            expect(await store.listSessions('nobody', t0)).toEqual([]);
          });
        });

        it("endSessionById ends the named session, only when it is the user's: another user's id is undefined and ends nothing", async () => {
          await withSeededStore(async (store) => {
            await store.createUser(user({ username: 'bob' }));
            const mine = session({ idHash: 'mine' });
            const theirs = session({ idHash: 'theirs', userId: 'user-bob' });
            await store.createSession(mine);
            await store.createSession(theirs);
            expect(await store.endSessionById(theirs.id, 'user-alice')).toBeUndefined();
            expect(await store.findSession('theirs', t0)).toStrictEqual(theirs);
            expect(await store.endSessionById(mine.id, 'user-alice')).toStrictEqual(mine);
            expect(await store.findSession('mine', t0)).toBeUndefined();
            expect(await store.endSessionById(mine.id, 'user-alice')).toBeUndefined();
            expect(await store.endSessionById('nope', undefined)).toBeUndefined();
            // The digest is not a name for it.
            expect(await store.endSessionById('theirs', undefined)).toBeUndefined();
            // An operator names any session.
            expect(await store.endSessionById(theirs.id, undefined)).toStrictEqual(theirs);
            expect(await store.listSessions(undefined, t0)).toEqual([]);
          });
        });

        it('touchSession records a request at most every `every` seconds, never moving the time back', async () => {
          await withSeededStore(async (store) => {
            const s = session();
            const other = session({ idHash: 'other' });
            await store.createSession(s);
            await store.createSession(other);
            const lastSeen = async () => (await store.findSession(s.idHash, t0))?.lastSeenAt;
            await store.touchSession(s.idHash, t0 + 5, 300);
            expect(await lastSeen()).toBe(t0 + 5);
            await store.touchSession(s.idHash, t0 + 100, 300);
            expect(await lastSeen()).toBe(t0 + 5);
            await store.touchSession(s.idHash, t0 + 305, 300); // exactly `every` later: not older than it yet
            expect(await lastSeen()).toBe(t0 + 5);
            await store.touchSession(s.idHash, t0 + 306, 300);
            expect(await lastSeen()).toBe(t0 + 306);
            await store.touchSession(s.idHash, t0 + 200, 0); // a clock behind
            expect(await lastSeen()).toBe(t0 + 306);
            await store.touchSession('unknown', t0 + 400, 300);
            expect(await store.findSession(s.idHash, t0)).toStrictEqual({ ...s, lastSeenAt: t0 + 306 });
            expect(await store.findSession('other', t0)).toStrictEqual(other);
          });
        });

        it('endOtherSignIns keeps exactly the one session, ends the other sessions and every refresh family of the user, leaves tokensRevokedAt and other users alone', async () => {
          await withSeededStore(async (store) => {
            await store.createUser(user({ username: 'bob' }));
            const keep = session({ idHash: 'keep' });
            for (const s of [keep, session({ idHash: 'other-1' }), session({ idHash: 'other-2' }), session({ idHash: 'stale', expiresAt: t0 + 5 })]) {
              await store.createSession(s);
            }
            const bobs = session({ idHash: 'bob-session', userId: 'user-bob' });
            await store.createSession(bobs);
            await store.createRefreshToken(refreshToken({ id: 'a1', tokenHash: 'a1', familyId: 'fam-a' }));
            expect(
              await store.rotateRefreshToken('a1', refreshToken({ id: 'a2', tokenHash: 'a2', familyId: 'fam-a', parentId: 'a1', createdAt: t0 + 1 }), t0 + 1),
            ).toBe(true);
            await store.createRefreshToken(refreshToken({ id: 'b1', tokenHash: 'b1', familyId: 'fam-b' }));
            await store.createRefreshToken(refreshToken({ id: 'c1', tokenHash: 'c1', familyId: 'fam-c' }));
            await store.revokeRefreshFamily('fam-c', t0 + 2);
            await store.createRefreshToken(refreshToken({ id: 'd1', tokenHash: 'd1', familyId: 'fam-d', expiresAt: t0 + 5 }));
            const bobsToken = refreshToken({ id: 'w1', tokenHash: 'w1', familyId: 'fam-bob', userId: 'user-bob' });
            await store.createRefreshToken(bobsToken);

            const now = t0 + 10;
            // The expired session and family go too, but only live ones count as ended.
            expect(await store.endOtherSignIns('user-alice', 'keep', now)).toEqual({ sessions: 2, refreshFamilies: 2 });
            expect(await store.listSessions('user-alice', t0)).toStrictEqual([keep]);
            for (const hash of ['a1', 'a2', 'b1', 'd1']) expect((await store.findRefreshToken(hash))?.revokedAt, hash).toBe(now);
            expect((await store.findRefreshToken('c1'))?.revokedAt).toBe(t0 + 2);
            for (const family of ['fam-a', 'fam-b', 'fam-d']) expect(await store.isRefreshFamilyRevoked(family), family).toBe(true);
            await store.createRefreshToken(refreshToken({ id: 'late', tokenHash: 'late', familyId: 'fam-a' }));
            expect((await store.findRefreshToken('late'))?.revokedAt).toBe(now);
            expect(await store.listRefreshFamilies('user-alice', now)).toEqual([]);
            expect((await store.findUserById('user-alice'))?.tokensRevokedAt).toBeUndefined();
            expect(await store.findSession('bob-session', t0)).toStrictEqual(bobs);
            expect(await store.findRefreshToken('w1')).toStrictEqual(bobsToken);
            expect(await store.isRefreshFamilyRevoked('fam-bob')).toBe(false);
            expect(await store.endOtherSignIns('user-alice', 'keep', now)).toEqual({ sessions: 0, refreshFamilies: 0 });
            expect(await store.endOtherSignIns('nobody', 'keep', now)).toEqual({ sessions: 0, refreshFamilies: 0 });
          });
        });
      });

      describe('refresh families', () => {
        it('refresh tokens and authorization codes keep where they were approved from and the session, or none', async () => {
          await withSeededStore(async (store) => {
            const browser = { approvedIp: '2001:db8::7', approvedUserAgent: 'Mozilla/5.0 (Macintosh) Safari/605.1.15', sessionId: 'sid-abc' };
            const rt = refreshToken(browser);
            await store.createRefreshToken(rt, { userTokensRevokedAt: undefined });
            expect(await store.findRefreshToken(rt.tokenHash)).toStrictEqual(rt);
            const none = refreshToken({
              id: 'none',
              tokenHash: 'none',
              familyId: 'f-none',
              approvedIp: undefined,
              approvedUserAgent: undefined,
              sessionId: undefined,
            });
            await store.createRefreshToken(none);
            expect(await store.findRefreshToken('none')).toStrictEqual(none);
            const code = authorizationCode();
            await store.createAuthorizationCode(code);
            expect(await store.findAuthorizationCode(code.codeHash)).toStrictEqual(code);
            const consumed = await store.consumeAuthorizationCode(code.codeHash, t0 + 1, { accessTokenJti: 'j', refreshFamilyId: 'f' });
            expect(consumed).toStrictEqual({ ...code, consumedAt: t0 + 1, accessTokenJti: 'j', refreshFamilyId: 'f' });
            const bare = authorizationCode({ codeHash: 'bare', approvedIp: undefined, approvedUserAgent: undefined, sessionId: undefined });
            await store.createAuthorizationCode(bare);
            expect(await store.findAuthorizationCode('bare')).toStrictEqual(bare);
          });
        });

        it('a rotated successor and a grace successor keep what they were given', async () => {
          await withSeededStore(async (store) => {
            const browser = { approvedIp: '192.0.2.10', approvedUserAgent: 'Mozilla/5.0 Firefox/128.0', sessionId: 'sid-s' };
            await store.createRefreshToken(refreshToken({ id: 'p', tokenHash: 'p', ...browser }));
            const next = refreshToken({ id: 'n', tokenHash: 'n', parentId: 'p', createdAt: t0 + 1, ...browser });
            expect(await store.rotateRefreshToken('p', next, t0 + 1)).toBe(true);
            expect(await store.findRefreshToken('n')).toStrictEqual(next);
            const grace = refreshToken({ id: 'g', tokenHash: 'g', parentId: 'p', createdAt: t0 + 2, ...browser });
            expect(await store.addGraceSuccessor('p', grace, { limit: 2, liveBranches: 5, now: t0 + 2 })).toBe(true);
            expect(await store.findRefreshToken('g')).toStrictEqual(grace);
          });
        });

        it("listRefreshFamilies: one row per live family (first and newest token times, the live token's expiry and origin), most recently used first", async () => {
          await withSeededStore(async (store) => {
            await store.createUser(user({ username: 'bob' }));
            const now = t0 + 1000;
            // Used twice: three tokens, the last one live.
            const origin = { approvedIp: '192.0.2.44', approvedUserAgent: 'Mozilla/5.0 Firefox/128.0', sessionId: 'sid-x' };
            await store.createRefreshToken(refreshToken({ id: 'u1', tokenHash: 'u1', familyId: 'used', ...origin }));
            const u2 = refreshToken({ id: 'u2', tokenHash: 'u2', familyId: 'used', parentId: 'u1', createdAt: t0 + 100, expiresAt: t0 + 2000, ...origin });
            expect(await store.rotateRefreshToken('u1', u2, t0 + 100)).toBe(true);
            const u3 = refreshToken({ id: 'u3', tokenHash: 'u3', familyId: 'used', parentId: 'u2', createdAt: t0 + 200, expiresAt: t0 + 5000, ...origin });
            expect(await store.rotateRefreshToken('u2', u3, t0 + 200)).toBe(true);
            // Never used since made; two of them with the same times (then by family id).
            await store.createRefreshToken(refreshToken({ id: 'n1', tokenHash: 'n1', familyId: 'new', createdAt: t0 + 50 }));
            await store.createRefreshToken(refreshToken({ id: 'm1', tokenHash: 'm1', familyId: 'another', createdAt: t0 + 50 }));
            // A first successor and a grace successor both unused: one row, the newest token's.
            await store.createRefreshToken(refreshToken({ id: 'g0', tokenHash: 'g0', familyId: 'graced' }));
            const g1 = refreshToken({ id: 'g1', tokenHash: 'g1', familyId: 'graced', parentId: 'g0', createdAt: t0 + 300, expiresAt: t0 + 3000 });
            expect(await store.rotateRefreshToken('g0', g1, t0 + 300)).toBe(true);
            const g2 = refreshToken({ id: 'g2', tokenHash: 'g2', familyId: 'graced', parentId: 'g0', createdAt: t0 + 301, expiresAt: t0 + 3001 });
            expect(await store.addGraceSuccessor('g0', g2, { limit: 2, liveBranches: 5, now: t0 + 301 })).toBe(true);
            // Not live: revoked, expired at `now`, only rotated, superseded; and bob's.
            await store.createRefreshToken(refreshToken({ id: 'r1', tokenHash: 'r1', familyId: 'revoked', createdAt: t0 + 600 }));
            await store.revokeRefreshFamily('revoked', t0 + 601);
            await store.createRefreshToken(refreshToken({ id: 'e1', tokenHash: 'e1', familyId: 'expired', createdAt: t0 + 20, expiresAt: now }));
            await store.createRefreshToken(refreshToken({ id: 'o1', tokenHash: 'o1', familyId: 'rotated', createdAt: t0 + 700, rotatedAt: t0 + 701 }));
            await store.createRefreshToken(refreshToken({ id: 's1', tokenHash: 's1', familyId: 'superseded', createdAt: t0 + 800, supersededAt: t0 + 801 }));
            await store.createRefreshToken(refreshToken({ id: 'b1', tokenHash: 'b1', familyId: 'bobs', userId: 'user-bob', createdAt: t0 + 400 }));

            const used = summary('used', { lastUsedAt: t0 + 200, expiresAt: t0 + 5000, ...origin });
            const graced = summary('graced', { lastUsedAt: t0 + 301, expiresAt: t0 + 3001 });
            const fresh = summary('new', { createdAt: t0 + 50, lastUsedAt: t0 + 50 });
            const another = summary('another', { createdAt: t0 + 50, lastUsedAt: t0 + 50 });
            const bobs = summary('bobs', { userId: 'user-bob', createdAt: t0 + 400, lastUsedAt: t0 + 400 });
            expect(await store.listRefreshFamilies('user-alice', now)).toStrictEqual([graced, used, another, fresh]);
            expect(await store.listRefreshFamilies(undefined, now)).toStrictEqual([bobs, graced, used, another, fresh]);
            expect((await store.listRefreshFamilies('user-alice', now - 1)).map((f) => f.familyId)).toEqual(['graced', 'used', 'another', 'new', 'expired']);
            expect(await store.listRefreshFamilies('nobody', now)).toEqual([]);
          });
        });

        it("revokeRefreshFamilyOf revokes a live family of the user and returns its summary; another user's, an unknown or a dead family is undefined and changes nothing", async () => {
          await withSeededStore(async (store) => {
            await store.createUser(user({ username: 'bob' }));
            const now = t0 + 100;
            await store.createRefreshToken(refreshToken({ id: 'm1', tokenHash: 'm1', familyId: 'mine' }));
            const theirs = refreshToken({ id: 't1', tokenHash: 't1', familyId: 'theirs', userId: 'user-bob' });
            await store.createRefreshToken(theirs);
            const old = refreshToken({ id: 'o1', tokenHash: 'o1', familyId: 'old', expiresAt: t0 + 10 });
            await store.createRefreshToken(old);

            expect(await store.revokeRefreshFamilyOf('theirs', 'user-alice', now)).toBeUndefined();
            expect(await store.findRefreshToken('t1')).toStrictEqual(theirs);
            expect(await store.isRefreshFamilyRevoked('theirs')).toBe(false);
            expect(await store.revokeRefreshFamilyOf('old', 'user-alice', now)).toBeUndefined();
            expect(await store.findRefreshToken('o1')).toStrictEqual(old);
            expect(await store.isRefreshFamilyRevoked('old')).toBe(false);
            expect(await store.revokeRefreshFamilyOf('nope', undefined, now)).toBeUndefined();
            expect(await store.isRefreshFamilyRevoked('nope')).toBe(false);

            expect(await store.revokeRefreshFamilyOf('mine', 'user-alice', now)).toStrictEqual(summary('mine'));
            expect((await store.findRefreshToken('m1'))?.revokedAt).toBe(now);
            expect(await store.isRefreshFamilyRevoked('mine')).toBe(true);
            expect(await store.listRefreshFamilies('user-alice', now)).toEqual([]);
            expect(await store.revokeRefreshFamilyOf('mine', 'user-alice', now + 1)).toBeUndefined();
            await store.createRefreshToken(refreshToken({ id: 'late', tokenHash: 'late', familyId: 'mine' }));
            expect((await store.findRefreshToken('late'))?.revokedAt).toBe(now);
            // An operator names any live family.
            expect(await store.revokeRefreshFamilyOf('theirs', undefined, now)).toStrictEqual(summary('theirs', { userId: 'user-bob' }));
            expect((await store.findRefreshToken('t1'))?.revokedAt).toBe(now);
          });
        });
      });

      describe('clients of a session (Back-Channel Logout)', () => {
        it('clientsOfSession: every client issued a code or a refresh family in the session, once each, sorted; none for others', async () => {
          await withSeededStore(async (store) => {
            await store.createClient(client({ clientId: 'web' }));
            await store.createClient(client({ clientId: 'app' }));
            await store.createClient(client({ clientId: 'tv' }));
            await store.createAuthorizationCode(authorizationCode({ codeHash: 'c1', clientId: 'web', sessionId: 'sid-1' }));
            await store.createAuthorizationCode(authorizationCode({ codeHash: 'c2', clientId: 'web', sessionId: 'sid-1' }));
            await store.createAuthorizationCode(authorizationCode({ codeHash: 'c3', clientId: 'tv', sessionId: 'sid-2' }));
            // A family whose code is long purged still names its session.
            await store.createRefreshToken(refreshToken({ id: 'r1', tokenHash: 'h1', familyId: 'f1', clientId: 'app', sessionId: 'sid-1' }));
            await store.createRefreshToken(refreshToken({ id: 'r2', tokenHash: 'h2', familyId: 'f2', clientId: 'cli', sessionId: undefined }));
            expect(await store.clientsOfSession('sid-1')).toEqual(['app', 'web']);
            expect(await store.clientsOfSession('sid-2')).toEqual(['tv']);
            expect(await store.clientsOfSession('sid-none')).toEqual([]);
            expect(await store.clientsOfSession('')).toEqual([]);
          });
        });
      });

      describe('consents', () => {
        it("listConsents: the user's consents, most recent first (grantedAt, then clientId, then audience), no one else's", async () => {
          await withSeededStore(async (store) => {
            await store.createUser(user({ username: 'bob' }));
            await store.createClient(client({ clientId: 'other' }));
            const older = consent({ grantedAt: t0 });
            const other = consent({ clientId: 'other', grantedAt: t0 + 10 });
            const cliB = consent({ audience: 'https://b.example.com', grantedAt: t0 + 10 });
            const cliA = consent({ audience: 'https://a.example.com', grantedAt: t0 + 10 });
            for (const c of [older, other, cliB, cliA, consent({ userId: 'user-bob', grantedAt: t0 + 20 })]) await store.saveConsent(c);
            expect(await store.listConsents('user-alice')).toStrictEqual([cliA, cliB, other, older]);
            expect(await store.listConsents('nobody')).toEqual([]);
          });
        });

        it("withdrawConsent removes the user's consents of that client and revokes only that client's families of that user", async () => {
          await withSeededStore(async (store) => {
            await store.createUser(user({ username: 'bob' }));
            await store.createClient(client({ clientId: 'other' }));
            const kept = consent({ clientId: 'other' });
            const bobs = consent({ userId: 'user-bob' });
            for (const c of [consent(), consent({ audience: 'https://other-api.example.com' }), kept, bobs]) await store.saveConsent(c);
            await store.createRefreshToken(refreshToken({ id: 'x1', tokenHash: 'x1', familyId: 'cli-1' }));
            expect(await store.rotateRefreshToken('x1', refreshToken({ id: 'x2', tokenHash: 'x2', familyId: 'cli-1', parentId: 'x1' }), t0 + 1)).toBe(true);
            await store.createRefreshToken(refreshToken({ id: 'y1', tokenHash: 'y1', familyId: 'cli-2' }));
            const otherClients = refreshToken({ id: 'z1', tokenHash: 'z1', familyId: 'other-1', clientId: 'other' });
            const bobsToken = refreshToken({ id: 'w1', tokenHash: 'w1', familyId: 'bob-1', userId: 'user-bob' });
            await store.createRefreshToken(otherClients);
            await store.createRefreshToken(bobsToken);

            const now = t0 + 50;
            expect(await store.withdrawConsent('user-alice', 'cli', now)).toBe(2);
            expect(await store.listConsents('user-alice')).toStrictEqual([kept]);
            expect(await store.listConsents('user-bob')).toStrictEqual([bobs]);
            for (const hash of ['x1', 'x2', 'y1']) expect((await store.findRefreshToken(hash))?.revokedAt, hash).toBe(now);
            expect(await store.isRefreshFamilyRevoked('cli-1')).toBe(true);
            expect(await store.isRefreshFamilyRevoked('cli-2')).toBe(true);
            expect(await store.findRefreshToken('z1')).toStrictEqual(otherClients);
            expect(await store.findRefreshToken('w1')).toStrictEqual(bobsToken);
            expect(await store.isRefreshFamilyRevoked('other-1')).toBe(false);
            expect(await store.isRefreshFamilyRevoked('bob-1')).toBe(false);
            expect((await store.listRefreshFamilies('user-alice', now)).map((f) => f.familyId)).toEqual(['other-1']);
            expect(await store.withdrawConsent('user-alice', 'cli', now)).toBe(0);
            expect(await store.withdrawConsent('user-alice', 'no-such-client', now)).toBe(0);
            expect(await store.withdrawConsent('user-bob', 'other', now)).toBe(0);
            expect(await store.findRefreshToken('w1')).toStrictEqual(bobsToken);
          });
        });

        it('withdrawConsent ends the families of a client the person never had to consent to (nothing stored) too', async () => {
          await withSeededStore(async (store) => {
            await store.createRefreshToken(refreshToken());
            expect(await store.withdrawConsent('user-alice', 'cli', t0 + 5)).toBe(0);
            expect((await store.findRefreshToken('refresh-hash-1'))?.revokedAt).toBe(t0 + 5);
            expect(await store.isRefreshFamilyRevoked('family-1')).toBe(true);
          });
        });
      });

      describe('profile, password and email', () => {
        it('updateUserProfile sets name and email and moves updatedAt; a changed email is no longer verified, the same one in another case stays so; false for an unknown user', async () => {
          await withStore(async (store) => {
            await store.createUser(user());
            await store.createUser(user({ username: 'bob' }));
            expect(await store.updateUserProfile('user-alice', { name: 'Alice Liddell', email: 'ALICE@Example.com' }, t0 + 10)).toBe(true);
            expect(await store.findUserById('user-alice')).toStrictEqual(user({ name: 'Alice Liddell', email: 'ALICE@Example.com', updatedAt: t0 + 10 }));
            expect(await store.updateUserProfile('user-alice', { name: undefined, email: 'alice@elsewhere.example' }, t0 + 20)).toBe(true);
            expect(await store.findUserById('user-alice')).toStrictEqual(
              user({ name: undefined, email: 'alice@elsewhere.example', emailVerified: false, updatedAt: t0 + 20 }),
            );
            // Back to the old address: verified only by following a link again.
            expect(await store.updateUserProfile('user-alice', { name: 'Alice', email: 'alice@example.com' }, t0 + 30)).toBe(true);
            expect((await store.findUserById('user-alice'))?.emailVerified).toBe(false);
            expect((await store.findUserById('user-alice'))?.updatedAt).toBe(t0 + 30);
            expect(await store.updateUserProfile('nobody', { name: 'X', email: 'x@example.com' }, t0 + 40)).toBe(false);
            expect(await store.findUserById('user-bob')).toStrictEqual(user({ username: 'bob' }));
          });
        });

        it('updateUserPassword changes the hash only: sessions, refresh families and tokensRevokedAt stay; false for an unknown user', async () => {
          await withSeededStore(async (store) => {
            await store.createUser(user({ username: 'bob' }));
            const s = session();
            const rt = refreshToken();
            await store.createSession(s);
            await store.createRefreshToken(rt);
            expect(await store.updateUserPassword('user-alice', 'scrypt$new')).toBe(true);
            expect(await store.findUserById('user-alice')).toStrictEqual(user({ passwordHash: 'scrypt$new' }));
            expect(await store.findSession(s.idHash, t0)).toStrictEqual(s);
            expect(await store.findRefreshToken(rt.tokenHash)).toStrictEqual(rt);
            expect(await store.updateUserPassword('nobody', 'scrypt$x')).toBe(false);
            expect((await store.findUserById('user-bob'))?.passwordHash).toBe(user().passwordHash);
          });
        });

        it('upgradePasswordHash replaces the hash only while it is still the expected one, and ends nothing: sessions, refresh families, tokensRevokedAt and updatedAt stay', async () => {
          await withSeededStore(async (store) => {
            await store.createUser(user({ username: 'bob' }));
            const s = session();
            const rt = refreshToken();
            await store.createSession(s);
            await store.createRefreshToken(rt);
            const old = user().passwordHash;
            const current = '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g';
            expect(await store.upgradePasswordHash('user-alice', old, current)).toBe(true);
            expect(await store.findUserById('user-alice')).toStrictEqual(user({ passwordHash: current }));
            expect(await store.findSession(s.idHash, t0)).toStrictEqual(s);
            expect(await store.findRefreshToken(rt.tokenHash)).toStrictEqual(rt);
            expect(await store.isRefreshFamilyRevoked(rt.familyId)).toBe(false);
            // The hash is no longer the expected one (already upgraded), or there is no such user.
            expect(await store.upgradePasswordHash('user-alice', old, '$argon2id$other')).toBe(false);
            expect((await store.findUserById('user-alice'))?.passwordHash).toBe(current);
            expect(await store.upgradePasswordHash('nobody', old, current)).toBe(false);
            expect((await store.findUserById('user-bob'))?.passwordHash).toBe(old);
          });
        });

        it('upgradePasswordHash never overwrites a password changed meanwhile, and of two racing upgrades exactly one lands', async () => {
          await withStore(async (store) => {
            await store.createUser(user());
            const old = user().passwordHash;
            // The person changed their password while a sign-in with the old one was being rehashed.
            expect(await store.setUserPassword('alice', '$argon2id$changed', t0)).toBe(true);
            expect(await store.upgradePasswordHash('user-alice', old, '$argon2id$rehash-of-the-old-password')).toBe(false);
            expect((await store.findUserById('user-alice'))?.passwordHash).toBe('$argon2id$changed');
            // Two sign-ins of the same person rehash at once: one wins, the other sees the hash moved.
            const outcomes = await Promise.all([
              store.upgradePasswordHash('user-alice', '$argon2id$changed', '$argon2id$first'),
              store.upgradePasswordHash('user-alice', '$argon2id$changed', '$argon2id$second'),
            ]);
            expect(outcomes.filter(Boolean)).toHaveLength(1);
            expect((await store.findUserById('user-alice'))?.passwordHash).toBe(outcomes[0] ? '$argon2id$first' : '$argon2id$second');
          });
        });

        it('markEmailVerified only while the email is still the one the link went to (in any ASCII case); after an email change it is false', async () => {
          await withStore(async (store) => {
            await store.createUser(user({ emailVerified: false }));
            await store.createUser(user({ username: 'bob', emailVerified: false }));
            expect(await store.markEmailVerified('user-alice', 'Alice@EXAMPLE.com')).toBe(true);
            expect((await store.findUserById('user-alice'))?.emailVerified).toBe(true);
            expect(await store.markEmailVerified('user-alice', 'alice@example.com')).toBe(true); // again: harmless
            expect(await store.updateUserProfile('user-alice', { name: 'Alice', email: 'new@example.com' }, t0 + 10)).toBe(true);
            expect(await store.markEmailVerified('user-alice', 'alice@example.com')).toBe(false);
            expect((await store.findUserById('user-alice'))?.emailVerified).toBe(false);
            expect(await store.markEmailVerified('user-alice', 'new@example.com')).toBe(true);
            expect((await store.findUserById('user-alice'))?.emailVerified).toBe(true);
            expect(await store.markEmailVerified('user-bob', 'new@example.com')).toBe(false);
            expect(await store.markEmailVerified('nobody', 'new@example.com')).toBe(false);
            expect((await store.findUserById('user-bob'))?.emailVerified).toBe(false);
          });
        });
      });

      describe('email tokens', () => {
        it('a link is spent once, while unexpired and only for its purpose; the spender gets the record with usedAt', async () => {
          await withStore(async (store) => {
            await store.createUser(user());
            const reset = emailToken();
            const verify = emailToken({ tokenHash: 'verify', purpose: 'email_verification', createdAt: t0 + 1, expiresAt: t0 + 86400 });
            await store.createEmailToken(reset);
            await store.createEmailToken(verify);
            expect(await store.useEmailToken(reset.tokenHash, 'email_verification', t0 + 1)).toBeUndefined();
            expect(await store.useEmailToken('verify', 'password_reset', t0 + 1)).toBeUndefined();
            expect(await store.useEmailToken(reset.tokenHash, 'password_reset', reset.expiresAt)).toBeUndefined(); // the first instant of expiry
            expect(await store.useEmailToken(reset.tokenHash, 'password_reset', reset.expiresAt - 1)).toStrictEqual({ ...reset, usedAt: reset.expiresAt - 1 });
            expect(await store.useEmailToken(reset.tokenHash, 'password_reset', reset.expiresAt - 1)).toBeUndefined();
            expect(await store.useEmailToken('unknown', 'password_reset', t0)).toBeUndefined();
            expect(await store.useEmailToken('verify', 'email_verification', t0 + 2)).toStrictEqual({ ...verify, usedAt: t0 + 2 });
          });
        });

        it('findEmailToken reads a link while it is usable, spending nothing', async () => {
          await withStore(async (store) => {
            await store.createUser(user());
            const reset = emailToken();
            await store.createEmailToken(reset);
            expect(await store.findEmailToken(reset.tokenHash, 'password_reset', t0 + 1)).toStrictEqual(reset);
            expect(await store.findEmailToken(reset.tokenHash, 'password_reset', t0 + 1)).toStrictEqual(reset);
            expect(await store.findEmailToken(reset.tokenHash, 'email_verification', t0 + 1)).toBeUndefined();
            expect(await store.findEmailToken(reset.tokenHash, 'password_reset', reset.expiresAt)).toBeUndefined();
            expect(await store.findEmailToken('unknown', 'password_reset', t0)).toBeUndefined();
            expect(await store.useEmailToken(reset.tokenHash, 'password_reset', t0 + 2)).toBeDefined();
            expect(await store.findEmailToken(reset.tokenHash, 'password_reset', t0 + 3)).toBeUndefined();
          });
        });

        it('simultaneous uses of one link: exactly one wins', async () => {
          await withStore(async (store) => {
            await store.createUser(user());
            await store.createEmailToken(emailToken());
            const results = await Promise.all(Array.from({ length: 20 }, (_, n) => store.useEmailToken('email-token-hash-1', 'password_reset', t0 + n)));
            const winners = results.filter((r) => r !== undefined);
            expect(winners).toHaveLength(1);
            expect(winners[0]?.usedAt).toBe(t0 + results.indexOf(winners[0]));
          });
        });

        it("countEmailTokens counts the user's unused links of that purpose created after `since`", async () => {
          await withStore(async (store) => {
            await store.createUser(user());
            await store.createUser(user({ username: 'bob' }));
            await store.createEmailToken(emailToken({ tokenHash: 'r0', createdAt: t0 }));
            await store.createEmailToken(emailToken({ tokenHash: 'r1', createdAt: t0 + 100 }));
            await store.createEmailToken(emailToken({ tokenHash: 'r2', createdAt: t0 + 200 }));
            expect(await store.useEmailToken('r2', 'password_reset', t0 + 201)).toBeDefined();
            await store.createEmailToken(emailToken({ tokenHash: 'v1', purpose: 'email_verification', createdAt: t0 + 150 }));
            await store.createEmailToken(emailToken({ tokenHash: 'b1', userId: 'user-bob', email: 'bob@example.com', createdAt: t0 + 150 }));
            expect(await store.countEmailTokens('user-alice', 'password_reset', t0 - 1)).toBe(2);
            expect(await store.countEmailTokens('user-alice', 'password_reset', t0)).toBe(1);
            expect(await store.countEmailTokens('user-alice', 'password_reset', t0 + 100)).toBe(0);
            expect(await store.countEmailTokens('user-alice', 'email_verification', t0)).toBe(1);
            expect(await store.countEmailTokens('user-bob', 'password_reset', t0)).toBe(1);
            expect(await store.countEmailTokens('nobody', 'password_reset', t0)).toBe(0);
          });
        });

        it('factor enrolment links: kept apart from mailed links, spent once; cancelEmailTokens spends every live one of the user and purpose, and nothing else', async () => {
          await withStore(async (store) => {
            await store.createUser(user());
            await store.createUser(user({ username: 'bob' }));
            const enrol = (tokenHash: string, extra: Partial<Parameters<typeof emailToken>[0]> = {}) =>
              emailToken({ tokenHash, purpose: 'factor_enrolment', expiresAt: t0 + 86400, ...extra });
            await store.createEmailToken(enrol('e1'));
            await store.createEmailToken(enrol('e2', { createdAt: t0 + 10 }));
            await store.createEmailToken(enrol('e-expired', { expiresAt: t0 + 50 }));
            await store.createEmailToken(enrol('e-bob', { userId: 'user-bob', email: 'bob@example.com' }));
            await store.createEmailToken(emailToken({ tokenHash: 'reset' }));
            // Only for its own purpose, in both directions.
            expect(await store.useEmailToken('e1', 'password_reset', t0 + 1)).toBeUndefined();
            expect(await store.useEmailToken('reset', 'factor_enrolment', t0 + 1)).toBeUndefined();
            expect(await store.countEmailTokens('user-alice', 'factor_enrolment', t0 - 1)).toBe(3);
            expect(await store.useEmailToken('e1', 'factor_enrolment', t0 + 1)).toStrictEqual({ ...enrol('e1'), usedAt: t0 + 1 });
            expect(await store.useEmailToken('e1', 'factor_enrolment', t0 + 2)).toBeUndefined();
            // e2 is the only live one left (e1 used, e-expired past its time at t0 + 100).
            expect(await store.cancelEmailTokens('user-alice', 'factor_enrolment', t0 + 100)).toBe(1);
            expect(await store.useEmailToken('e2', 'factor_enrolment', t0 + 101)).toBeUndefined();
            expect(await store.cancelEmailTokens('user-alice', 'factor_enrolment', t0 + 100)).toBe(0);
            // Another user's link and another purpose's link are untouched.
            expect(await store.useEmailToken('e-bob', 'factor_enrolment', t0 + 102)).toMatchObject({ userId: 'user-bob', usedAt: t0 + 102 });
            expect(await store.useEmailToken('reset', 'password_reset', t0 + 103)).toMatchObject({ usedAt: t0 + 103 });
            expect(await store.cancelEmailTokens('nobody', 'factor_enrolment', t0)).toBe(0);
            // Cancelled links count as used: purged like them.
            expect((await store.purgeExpired(t0 + 200)).emailTokens).toBe(4);
          });
        });

        it('purgeExpired removes links once used, or a day after they expired, at most batchSize at a time', async () => {
          await withStore(async (store) => {
            await store.createUser(user());
            const now = t0 + 2 * day;
            await store.createEmailToken(emailToken({ tokenHash: 'used-1', expiresAt: now + 1000 }));
            await store.createEmailToken(emailToken({ tokenHash: 'used-2', expiresAt: now + 1000 }));
            expect(await store.useEmailToken('used-1', 'password_reset', t0 + 1)).toBeDefined();
            expect(await store.useEmailToken('used-2', 'password_reset', t0 + 1)).toBeDefined();
            await store.createEmailToken(emailToken({ tokenHash: 'old', expiresAt: now - day }));
            await store.createEmailToken(emailToken({ tokenHash: 'recent', expiresAt: now - day + 1 }));
            await store.createEmailToken(emailToken({ tokenHash: 'live', expiresAt: now + 100 }));
            expect(await store.purgeExpired(now, 2)).toEqual({
              authorizationCodes: 0,
              deviceGrants: 0,
              sessions: 0,
              refreshTokens: 0,
              revokedAccessTokens: 0,
              emailTokens: 2,
              usedOnce: 0,
              registrationTokens: 0,
              pushedRequests: 0,
            });
            expect((await store.purgeExpired(now, 2)).emailTokens).toBe(1);
            expect((await store.purgeExpired(now)).emailTokens).toBe(0);
            expect(await store.useEmailToken('live', 'password_reset', now)).toBeDefined();
            // 'recent' goes a second later; the link just used goes at once.
            expect((await store.purgeExpired(now + 1)).emailTokens).toBe(2);
          });
        });
      });
    });

    describe('removing a client (Authorization Code flow records)', () => {
      it("removes its authorization codes and consents, not other clients'", async () => {
        await withSeededStore(async (store) => {
          await store.createClient(client({ clientId: 'other' }));
          const theirCode = authorizationCode({ codeHash: 'code-theirs', clientId: 'other' });
          const theirConsent = consent({ clientId: 'other' });
          await store.createAuthorizationCode(authorizationCode({ codeHash: 'code-mine' }));
          await store.createAuthorizationCode(theirCode);
          await store.saveConsent(consent());
          await store.saveConsent(theirConsent);

          expect(await store.removeClient('cli', t0)).toBe(true);

          expect(await store.findAuthorizationCode('code-mine')).toBeUndefined();
          expect(await store.findConsent('user-alice', 'cli', 'https://api.example.com')).toBeUndefined();
          expect(await store.findAuthorizationCode('code-theirs')).toStrictEqual(theirCode);
          expect(await store.findConsent('user-alice', 'other', 'https://api.example.com')).toStrictEqual(theirConsent);
        });
      });
    });

    describe('roles, API permissions, machine clients, one-time keys and the audit log', () => {
      const apiA = 'https://a.example.com';
      const apiB = 'https://b.example.com';
      /** A role as createRole takes it. */
      const role = (name: string, permissions: Permission[] = [], overrides: { description?: string | undefined } = {}) => ({
        name,
        description: `The ${name} role`,
        permissions,
        createdAt: t0,
        ...overrides,
      });
      /** A store holding alice, bob and Carol, APIs A and B (scopes read, write, admin) and client cli. */
      async function withDirectory(fn: (store: Store) => Promise<void>): Promise<void> {
        await withStore(async (store) => {
          for (const username of ['bob', 'alice', 'Carol']) await store.createUser(user({ username }));
          await store.createApi(api({ identifier: apiA, name: 'A', scopes: ['read', 'write', 'admin'] }));
          await store.createApi(api({ identifier: apiB, name: 'B', scopes: ['read', 'write'] }));
          await store.createClient(client());
          await fn(store);
        });
      }
      const rolesOf = async (store: Store, id: string) => (await store.findUserById(id))?.roles;

      describe('roles', () => {
        it('the built-in admin role is there from the start, held by nobody, and cannot be removed', async () => {
          await withStore(async (store) => {
            const admin = await store.findRole('admin');
            expect(admin).toMatchObject({ name: 'admin', description: 'May use the admin console', permissions: [], builtIn: true, members: 0 });
            expect(Number.isInteger(admin?.createdAt)).toBe(true);
            expect(await store.listRoles()).toEqual([admin]);
            expect(await store.removeRole('admin')).toBe(false);
            expect(await store.findRole('admin')).toEqual(admin);
            await expect(store.createRole(role('admin'))).rejects.toBeInstanceOf(DuplicateError);
          });
        });

        it('createRole keeps the role with its permissions sorted by api, then scope (one given twice is one); builtIn and members come from the store', async () => {
          await withDirectory(async (store) => {
            const permissions = [
              { api: apiB, scope: 'read' },
              { api: apiA, scope: 'write' },
              { api: apiA, scope: 'admin' },
              { api: apiB, scope: 'read' },
            ];
            await store.createRole({ ...role('editor', permissions), builtIn: true, members: 7 } as Parameters<Store['createRole']>[0]);
            expect(await store.findRole('editor')).toStrictEqual({
              name: 'editor',
              description: 'The editor role',
              permissions: [
                { api: apiA, scope: 'admin' },
                { api: apiA, scope: 'write' },
                { api: apiB, scope: 'read' },
              ],
              builtIn: false,
              createdAt: t0,
              members: 0,
              groups: [],
              managedBy: undefined,
            });
            await store.createRole(role('bare', [], { description: undefined }));
            expect(await store.findRole('bare')).toStrictEqual({
              name: 'bare',
              description: undefined,
              permissions: [],
              builtIn: false,
              createdAt: t0,
              members: 0,
              groups: [],
              managedBy: undefined,
            });
            expect(await store.findRole('nobody')).toBeUndefined();
            expect(await store.removeRole('bare')).toBe(true);
            expect(await store.removeRole('bare')).toBe(false);
          });
        });

        it('role names are case-sensitive: a taken name is DuplicateError, another case is another role; listRoles sorts in byte order', async () => {
          await withDirectory(async (store) => {
            await store.createRole(role('reader', [{ api: apiA, scope: 'read' }]));
            await expect(store.createRole(role('reader', [{ api: apiB, scope: 'write' }], { description: 'Second' }))).rejects.toBeInstanceOf(DuplicateError);
            expect(await store.findRole('reader')).toMatchObject({ description: 'The reader role', permissions: [{ api: apiA, scope: 'read' }] });
            await store.createRole(role('Reader'));
            expect(await store.findRole('READER')).toBeUndefined();
            expect((await store.listRoles()).map((r) => r.name)).toEqual(['Reader', 'admin', 'reader']);
          });
        });

        it('a permission of an unknown API is refused, and the role is not made', async () => {
          await withDirectory(async (store) => {
            await expect(store.createRole(role('ghost', [{ api: 'https://none.example.com', scope: 'read' }]))).rejects.toBeInstanceOf(MissingReferenceError);
            expect(await store.findRole('ghost')).toBeUndefined();
          });
        });

        it('updateRole replaces the permissions, and the description only when given (undefined clears it); false for an unknown role', async () => {
          await withDirectory(async (store) => {
            await store.createRole(
              role('ops', [
                { api: apiA, scope: 'read' },
                { api: apiA, scope: 'write' },
              ]),
            );
            expect(
              await store.updateRole('ops', {
                permissions: [
                  { api: apiB, scope: 'write' },
                  { api: apiA, scope: 'admin' },
                ],
              }),
            ).toBe(true);
            expect(await store.findRole('ops')).toMatchObject({
              description: 'The ops role',
              permissions: [
                { api: apiA, scope: 'admin' },
                { api: apiB, scope: 'write' },
              ],
            });
            expect(await store.updateRole('ops', { description: 'Operators' })).toBe(true);
            expect(await store.findRole('ops')).toMatchObject({
              description: 'Operators',
              permissions: [
                { api: apiA, scope: 'admin' },
                { api: apiB, scope: 'write' },
              ],
            });
            expect(await store.updateRole('ops', { permissions: [], description: undefined })).toBe(true);
            expect(await store.findRole('ops')).toMatchObject({ description: undefined, permissions: [] });
            expect(await store.updateRole('nobody', { description: 'x' })).toBe(false);
            expect(await store.updateRole('nobody', { permissions: [{ api: apiA, scope: 'read' }] })).toBe(false);
            expect(await store.updateRole('nobody', {})).toBe(false);
            expect(await store.updateRole('ops', {})).toBe(true);
            // The built-in role's permissions can be changed; it stays built in.
            expect(await store.updateRole('admin', { permissions: [{ api: apiA, scope: 'admin' }] })).toBe(true);
            expect(await store.findRole('admin')).toMatchObject({
              builtIn: true,
              description: 'May use the admin console',
              permissions: [{ api: apiA, scope: 'admin' }],
            });
          });
        });

        it('an update whose permissions are refused changes nothing (one step)', async () => {
          await withDirectory(async (store) => {
            await store.createRole(role('ops', [{ api: apiA, scope: 'read' }]));
            await expect(
              store.updateRole('ops', {
                description: 'Changed',
                permissions: [
                  { api: apiA, scope: 'write' },
                  { api: 'https://none.example.com', scope: 'x' },
                ],
              }),
            ).rejects.toBeInstanceOf(MissingReferenceError);
            expect(await store.findRole('ops')).toMatchObject({ description: 'The ops role', permissions: [{ api: apiA, scope: 'read' }] });
          });
        });

        it('grantRole is idempotent and keeps the first grant; false for an unknown user or role; revokeRole is false when not held', async () => {
          await withDirectory(async (store) => {
            await store.createRole(role('ops'));
            expect(await store.grantRole('user-alice', 'ops', t0)).toBe(true);
            expect(await store.grantRole('user-alice', 'ops', t0 + 5)).toBe(true);
            expect(await store.findRole('ops')).toMatchObject({ members: 1 });
            expect(await store.grantRole('nobody', 'ops', t0)).toBe(false);
            expect(await store.grantRole('user-alice', 'nothing', t0)).toBe(false);
            expect(await store.grantRole('user-alice', 'OPS', t0)).toBe(false);
            expect(await rolesOf(store, 'user-alice')).toEqual(['ops']);
            expect(await store.revokeRole('user-alice', 'ops')).toBe(true);
            expect(await store.revokeRole('user-alice', 'ops')).toBe(false);
            expect(await store.revokeRole('user-bob', 'ops')).toBe(false);
            expect(await store.findRole('ops')).toMatchObject({ members: 0 });
            expect(await rolesOf(store, 'user-alice')).toEqual([]);
          });
        });

        it('every read of a user carries its roles, sorted in byte order; createUser ignores the roles it is given', async () => {
          await withDirectory(async (store) => {
            await store.createUser(user({ username: 'dave', roles: ['admin'] }));
            expect(await rolesOf(store, 'user-dave')).toEqual([]);
            await store.createRole(role('viewer'));
            await store.createRole(role('Zeta'));
            // Read before the grants: a store that caches users must not hand out the old roles.
            expect(await rolesOf(store, 'user-alice')).toEqual([]);
            for (const name of ['viewer', 'admin', 'Zeta']) expect(await store.grantRole('user-alice', name, t0)).toBe(true);
            expect(await store.grantRole('user-bob', 'viewer', t0)).toBe(true);
            const roles = ['Zeta', 'admin', 'viewer'];
            expect(await store.findUserById('user-alice')).toEqual(user({ username: 'alice', roles }));
            expect(await store.findUserByUsername('ALICE')).toEqual(user({ username: 'alice', roles }));
            expect(await store.findUsersByEmail('alice@example.com')).toEqual([user({ username: 'alice', roles })]);
            expect((await store.listUsers()).map((u) => [u.username, u.roles])).toEqual([
              ['alice', roles],
              ['bob', ['viewer']],
              ['Carol', []],
              ['dave', []],
            ]);
            expect((await store.listRoleMembers('viewer')).map((u) => [u.username, u.roles])).toEqual([
              ['alice', roles],
              ['bob', ['viewer']],
            ]);
          });
        });

        it('listRoleMembers: the users holding the role sorted by username (ignoring ASCII case), whole; none for another or an unknown role', async () => {
          await withDirectory(async (store) => {
            await store.createRole(role('ops'));
            for (const id of ['user-carol', 'user-bob', 'user-alice']) await store.grantRole(id, 'ops', t0);
            expect((await store.listRoleMembers('ops')).map((u) => u.username)).toEqual(['alice', 'bob', 'Carol']);
            expect((await store.listRoleMembers('ops'))[1]).toEqual(user({ username: 'bob', roles: ['ops'] }));
            expect(await store.listRoleMembers('admin')).toEqual([]);
            expect(await store.listRoleMembers('nothing')).toEqual([]);
          });
        });

        it('a role keeps its upstream groups sorted and distinct; updateRole replaces them only when given; removing the role takes them', async () => {
          await withDirectory(async (store) => {
            await store.createRole({ ...role('ops'), groups: ['platform', 'Ops', 'platform', 'sre'] });
            expect(await store.findRole('ops')).toMatchObject({ groups: ['Ops', 'platform', 'sre'], managedBy: undefined });
            expect(await store.updateRole('ops', { permissions: [{ api: apiA, scope: 'read' }] })).toBe(true);
            expect(await store.findRole('ops')).toMatchObject({ groups: ['Ops', 'platform', 'sre'] });
            expect(await store.updateRole('ops', { groups: ['sre', 'oncall'] })).toBe(true);
            expect(await store.findRole('ops')).toMatchObject({ groups: ['oncall', 'sre'], permissions: [{ api: apiA, scope: 'read' }] });
            expect(await store.updateRole('ops', { groups: [] })).toBe(true);
            expect((await store.listRoles()).find((r) => r.name === 'ops')?.groups).toEqual([]);
            expect(await store.updateRole('ghost', { groups: ['sre'] })).toBe(false);
            await store.updateRole('ops', { groups: ['sre'] });
            expect(await store.removeRole('ops')).toBe(true);
            await store.createRole(role('ops'));
            expect(await store.findRole('ops')).toMatchObject({ groups: [] });
          });
        });

        it('setGroupRoles replaces exactly the roles held through groups: a direct grant of the same role stays, unknown roles are skipped', async () => {
          await withDirectory(async (store) => {
            await store.createRole(role('ops', [{ api: apiA, scope: 'write' }]));
            await store.createRole(role('viewer', [{ api: apiA, scope: 'read' }]));
            await store.grantRole('user-alice', 'viewer', t0);
            // Read before: a store that caches users must not hand out the old roles.
            expect(await rolesOf(store, 'user-alice')).toEqual(['viewer']);
            expect(await store.setGroupRoles('user-alice', ['ops', 'viewer', 'ghost', 'ops'], t0)).toEqual({ gained: ['ops', 'viewer'], lost: [] });
            expect(await rolesOf(store, 'user-alice')).toEqual(['ops', 'viewer']);
            expect(await store.listUserRoleSources('user-alice')).toEqual({ direct: ['viewer'], group: ['ops', 'viewer'] });
            expect(await store.findRole('viewer')).toMatchObject({ members: 1 });
            expect((await store.listRoleMembers('viewer')).map((u) => u.username)).toEqual(['alice']);
            expect(await store.permittedScopes('user-alice', apiA)).toEqual(['read', 'write']);
            // The same set again changes nothing.
            expect(await store.setGroupRoles('user-alice', ['viewer', 'ops'], t0 + 1)).toEqual({ gained: [], lost: [] });
            // The groups went: the group roles go, the direct grant of viewer stays.
            expect(await store.setGroupRoles('user-alice', [], t0 + 2)).toEqual({ gained: [], lost: ['ops', 'viewer'] });
            expect(await rolesOf(store, 'user-alice')).toEqual(['viewer']);
            expect(await store.permittedScopes('user-alice', apiA)).toEqual(['read']);
            expect(await store.listUserRoleSources('user-alice')).toEqual({ direct: ['viewer'], group: [] });
            expect(await store.setGroupRoles('nobody', ['ops'], t0)).toBe(false);
            expect(await store.listUserRoleSources('nobody')).toEqual({ direct: [], group: [] });
          });
        });

        it('revokeRole takes back the direct grant only: a role held through a group stays until the groups change', async () => {
          await withDirectory(async (store) => {
            await store.createRole(role('ops'));
            await store.setGroupRoles('user-bob', ['ops'], t0);
            expect(await store.revokeRole('user-bob', 'ops')).toBe(false);
            expect(await rolesOf(store, 'user-bob')).toEqual(['ops']);
            expect(await store.grantRole('user-bob', 'ops', t0)).toBe(true);
            expect(await store.revokeRole('user-bob', 'ops')).toBe(true);
            expect(await rolesOf(store, 'user-bob')).toEqual(['ops']);
            expect(await store.listUserRoleSources('user-bob')).toEqual({ direct: [], group: ['ops'] });
            // Removing the role takes the group hold along.
            expect(await store.removeRole('ops')).toBe(true);
            expect(await rolesOf(store, 'user-bob')).toEqual([]);
          });
        });

        it('managedBy: given at creation, kept on reads, set and cleared by setManagedBy for each kind; false for an unknown object', async () => {
          await withDirectory(async (store) => {
            const file = '/etc/latchkey/latchkey.yaml';
            await store.createClient(client({ clientId: 'managed', managedBy: file }));
            await store.createApi(api({ identifier: 'https://managed.example.com', managedBy: file }));
            await store.createRole({ ...role('managed'), managedBy: file });
            await store.createConnector({ id: 'sso', type: 'oidc', name: 'SSO', config: {}, secret: undefined, createdAt: t0, managedBy: file });
            expect((await store.findClient('managed'))?.managedBy).toBe(file);
            expect((await store.findApi('https://managed.example.com'))?.managedBy).toBe(file);
            expect((await store.findRole('managed'))?.managedBy).toBe(file);
            expect((await store.findConnector('sso'))?.managedBy).toBe(file);
            expect((await store.listConnectors())[0]?.managedBy).toBe(file);
            expect((await store.findClient('cli'))?.managedBy).toBeUndefined();
            expect((await store.findApi(apiA))?.managedBy).toBeUndefined();
            // updateApi leaves it alone.
            expect(await store.updateApi(api({ identifier: 'https://managed.example.com', name: 'Renamed' }))).toBe(true);
            expect((await store.findApi('https://managed.example.com'))?.managedBy).toBe(file);

            expect(await store.setManagedBy('client', 'cli', file)).toBe(true);
            expect((await store.findClient('cli'))?.managedBy).toBe(file);
            expect(await store.setManagedBy('client', 'managed', undefined)).toBe(true);
            expect((await store.findClient('managed'))?.managedBy).toBeUndefined();
            expect(await store.setManagedBy('api', apiA, '/srv/other.yaml')).toBe(true);
            expect((await store.findApi(apiA))?.managedBy).toBe('/srv/other.yaml');
            expect(await store.setManagedBy('role', 'managed', undefined)).toBe(true);
            expect((await store.findRole('managed'))?.managedBy).toBeUndefined();
            expect(await store.setManagedBy('connector', 'sso', undefined)).toBe(true);
            expect((await store.findConnector('sso'))?.managedBy).toBeUndefined();
            for (const kind of ['client', 'api', 'role', 'connector'] as const) expect(await store.setManagedBy(kind, 'nothing', file)).toBe(false);
          });
        });

        it('removeRole removes the role, its permissions and every grant of it; holders keep their other roles', async () => {
          await withDirectory(async (store) => {
            await store.createRole(role('ops', [{ api: apiA, scope: 'write' }]));
            await store.grantRole('user-alice', 'ops', t0);
            await store.grantRole('user-alice', 'admin', t0);
            await store.grantRole('user-bob', 'ops', t0);
            expect(await rolesOf(store, 'user-alice')).toEqual(['admin', 'ops']);
            expect(await store.removeRole('ops')).toBe(true);
            expect(await store.findRole('ops')).toBeUndefined();
            expect(await rolesOf(store, 'user-alice')).toEqual(['admin']);
            expect(await rolesOf(store, 'user-bob')).toEqual([]);
            expect(await store.permittedScopes('user-alice', apiA)).toEqual([]);
            // A role made again under the name starts with nothing of the old one.
            await store.createRole(role('ops'));
            expect(await store.findRole('ops')).toMatchObject({ permissions: [], members: 0 });
            expect(await store.listRoleMembers('ops')).toEqual([]);
            expect(await store.removeRole('nothing')).toBe(false);
          });
        });

        it("permittedScopes: the scopes of the API that the user's roles give, distinct and sorted; none of other APIs, users or revoked roles", async () => {
          await withDirectory(async (store) => {
            await store.createRole(
              role('reader', [
                { api: apiA, scope: 'read' },
                { api: apiB, scope: 'read' },
              ]),
            );
            await store.createRole(
              role('writer', [
                { api: apiA, scope: 'write' },
                { api: apiA, scope: 'read' },
                { api: apiB, scope: 'write' },
              ]),
            );
            // Scopes the API does not declare are the caller's to drop; the store gives them as stored.
            await store.createRole(
              role('odd', [
                { api: apiA, scope: 'Zebra' },
                { api: apiA, scope: 'undeclared' },
              ]),
            );
            expect(await store.permittedScopes('user-alice', apiA)).toEqual([]);
            for (const name of ['writer', 'reader', 'odd']) await store.grantRole('user-alice', name, t0);
            await store.grantRole('user-bob', 'reader', t0);
            expect(await store.permittedScopes('user-alice', apiA)).toEqual(['Zebra', 'read', 'undeclared', 'write']);
            expect(await store.permittedScopes('user-alice', apiB)).toEqual(['read', 'write']);
            expect(await store.permittedScopes('user-bob', apiA)).toEqual(['read']);
            expect(await store.permittedScopes('user-carol', apiA)).toEqual([]);
            expect(await store.permittedScopes('user-alice', 'https://none.example.com')).toEqual([]);
            expect(await store.permittedScopes('nobody', apiA)).toEqual([]);
            await store.revokeRole('user-alice', 'writer');
            await store.revokeRole('user-alice', 'odd');
            expect(await store.permittedScopes('user-alice', apiA)).toEqual(['read']);
            await store.updateRole('reader', { permissions: [{ api: apiB, scope: 'read' }] });
            expect(await store.permittedScopes('user-alice', apiA)).toEqual([]);
          });
        });
      });

      describe('APIs and their permissions', () => {
        it('an API keeps its scopes in the order given; updateApi replaces them', async () => {
          await withStore(async (store) => {
            await store.createApi(api({ scopes: ['write', 'read', 'admin:all'] }));
            expect(await store.findApi('https://api.example.com')).toStrictEqual(api({ scopes: ['write', 'read', 'admin:all'] }));
            expect(await store.listApis()).toStrictEqual([api({ scopes: ['write', 'read', 'admin:all'] })]);
            expect(await store.updateApi(api({ scopes: ['read'] }))).toBe(true);
            expect(await store.findApi('https://api.example.com')).toStrictEqual(api({ scopes: ['read'] }));
          });
        });

        it('removing an API removes its role permissions and client grants, and nothing of other APIs', async () => {
          await withDirectory(async (store) => {
            await store.createRole(
              role('ops', [
                { api: apiA, scope: 'read' },
                { api: apiB, scope: 'write' },
              ]),
            );
            await store.grantRole('user-alice', 'ops', t0);
            await store.saveClientGrant({ clientId: 'cli', api: apiA, scopes: ['read'], createdAt: t0 });
            await store.saveClientGrant({ clientId: 'cli', api: apiB, scopes: ['write'], createdAt: t0 });
            expect(await store.removeApi(apiA)).toBe(true);
            expect(await store.findRole('ops')).toMatchObject({ permissions: [{ api: apiB, scope: 'write' }], members: 1 });
            expect(await store.permittedScopes('user-alice', apiA)).toEqual([]);
            expect(await store.permittedScopes('user-alice', apiB)).toEqual(['write']);
            expect(await store.findClientGrant('cli', apiA)).toBeUndefined();
            expect((await store.listClientGrants('cli')).map((g) => g.api)).toEqual([apiB]);
            // An API made again under the identifier starts with nothing of the old one.
            await store.createApi(api({ identifier: apiA, scopes: ['read'] }));
            expect(await store.permittedScopes('user-alice', apiA)).toEqual([]);
            expect(await store.findClientGrant('cli', apiA)).toBeUndefined();
          });
        });
      });

      describe('clients', () => {
        const keyed = client({
          clientId: 'svc',
          secretHash: 'sha256-current',
          grantTypes: ['client_credentials'],
          requirePkce: false,
          jwksUri: 'https://svc.example.com/jwks.json',
          jwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'x-coord', y: 'y-coord', kid: 'k1', use: 'sig' }] },
          secretSealed: 'sealed-current',
          previousSecretHash: 'sha256-previous',
          previousSecretSealed: 'sealed-previous',
          previousSecretExpiresAt: t0 + 3600,
          disabled: true,
        });

        it('round-trip the key, sealed-secret, previous-secret and disabled fields, and client_credentials, through createClient and ensureClient', async () => {
          await withStore(async (store) => {
            await store.createClient(keyed);
            expect(await store.findClient('svc')).toStrictEqual(keyed);
            expect(await store.listClients()).toStrictEqual([keyed]);
            await store.ensureClient({ ...keyed, clientId: 'svc-2' });
            expect(await store.findClient('svc-2')).toStrictEqual({ ...keyed, clientId: 'svc-2' });
            // A client of none of them reads them back as none.
            await store.createClient(client());
            expect(await store.findClient('cli')).toStrictEqual(client());
          });
        });

        it('updateClient changes only what is given (undefined clears an optional field, never a required one); false for an unknown client', async () => {
          await withStore(async (store) => {
            await store.createClient(keyed);
            expect(await store.updateClient('svc', { name: 'Renamed', redirectUris: ['https://svc.example.com/cb'], firstParty: true })).toBe(true);
            expect(await store.findClient('svc')).toStrictEqual({ ...keyed, name: 'Renamed', redirectUris: ['https://svc.example.com/cb'], firstParty: true });
            const changes = {
              postLogoutRedirectUris: ['https://svc.example.com/bye'],
              backchannelLogoutUri: 'https://svc.example.com/logout',
              grantTypes: ['client_credentials', 'authorization_code'] as const,
              requirePkce: true,
              jwks: { keys: [{ kty: 'RSA', n: 'n', e: 'AQAB' }] },
            };
            expect(await store.updateClient('svc', { ...changes, grantTypes: [...changes.grantTypes] })).toBe(true);
            const changed = {
              ...keyed,
              name: 'Renamed',
              redirectUris: ['https://svc.example.com/cb'],
              firstParty: true,
              ...changes,
              grantTypes: [...changes.grantTypes],
            };
            expect(await store.findClient('svc')).toStrictEqual(changed);
            expect(await store.updateClient('svc', { jwksUri: undefined, backchannelLogoutUri: undefined, name: undefined })).toBe(true);
            expect(await store.findClient('svc')).toStrictEqual({ ...changed, jwksUri: undefined, backchannelLogoutUri: undefined });
            expect(await store.updateClient('svc', { jwks: undefined })).toBe(true);
            expect((await store.findClient('svc'))?.jwks).toBeUndefined();
            expect(await store.updateClient('svc', {})).toBe(true);
            // Nothing outside ClientChanges can be changed through it (a secret, builtIn, disabled).
            const sneaky = { secretHash: 'sha256-forged', builtIn: true, disabled: false, tokensRevokedAt: 1 } as unknown as ClientChanges;
            expect(await store.updateClient('svc', sneaky)).toBe(true);
            expect(await store.findClient('svc')).toMatchObject({ secretHash: 'sha256-current', builtIn: false, disabled: true, tokensRevokedAt: undefined });
            expect(await store.updateClient('nobody', { name: 'x' })).toBe(false);
            expect(await store.updateClient('nobody', {})).toBe(false);
            expect(await store.findClient('nobody')).toBeUndefined();
          });
        });

        it('rotateClientSecret: the current secret becomes the previous one until keepOldUntil, or is dropped at once without it; false for an unknown client', async () => {
          await withStore(async (store) => {
            await store.createClient({ ...keyed, disabled: false });
            expect(await store.rotateClientSecret('svc', { hash: 'sha256-new', sealed: 'sealed-new' }, t0 + 86400)).toBe(true);
            expect(await store.findClient('svc')).toMatchObject({
              secretHash: 'sha256-new',
              secretSealed: 'sealed-new',
              previousSecretHash: 'sha256-current',
              previousSecretSealed: 'sealed-current',
              previousSecretExpiresAt: t0 + 86400,
            });
            expect(await store.rotateClientSecret('svc', { hash: 'sha256-newer', sealed: 'sealed-newer' }, undefined)).toBe(true);
            expect(await store.findClient('svc')).toStrictEqual({
              ...keyed,
              disabled: false,
              secretHash: 'sha256-newer',
              secretSealed: 'sealed-newer',
              previousSecretHash: undefined,
              previousSecretSealed: undefined,
              previousSecretExpiresAt: undefined,
            });
            expect(await store.rotateClientSecret('nobody', { hash: 'h', sealed: 's' }, t0)).toBe(false);
          });
        });

        it('rotateClientSecret of a secret made before sealed copies were kept keeps its digest; a client without a secret has none to keep', async () => {
          await withStore(async (store) => {
            await store.createClient(client({ clientId: 'old', secretHash: 'sha256-old' }));
            expect(await store.rotateClientSecret('old', { hash: 'sha256-new', sealed: 'sealed-new' }, t0 + 60)).toBe(true);
            expect(await store.findClient('old')).toMatchObject({
              previousSecretHash: 'sha256-old',
              previousSecretSealed: undefined,
              previousSecretExpiresAt: t0 + 60,
            });
            await store.createClient(client({ clientId: 'pub' }));
            expect(await store.rotateClientSecret('pub', { hash: 'sha256-first', sealed: 'sealed-first' }, t0 + 60)).toBe(true);
            expect(await store.findClient('pub')).toMatchObject({
              secretHash: 'sha256-first',
              secretSealed: 'sealed-first',
              previousSecretHash: undefined,
              previousSecretSealed: undefined,
              previousSecretExpiresAt: undefined,
            });
          });
        });

        it('setClientDisabled sets and lifts the flag, touching nothing else; false for an unknown client', async () => {
          await withStore(async (store) => {
            await store.createClient(client());
            expect(await store.setClientDisabled('cli', true)).toBe(true);
            expect(await store.findClient('cli')).toStrictEqual(client({ disabled: true }));
            expect(await store.setClientDisabled('cli', true)).toBe(true);
            expect(await store.setClientDisabled('cli', false)).toBe(true);
            expect(await store.findClient('cli')).toStrictEqual(client());
            expect(await store.setClientDisabled('nobody', true)).toBe(false);
          });
        });

        it('web origins round-trip through createClient and ensureClient, in the order given, and updateClient replaces them', async () => {
          await withStore(async (store) => {
            const spa = client({ clientId: 'spa', webOrigins: ['https://app.example.com', 'http://localhost:5173'] });
            await store.createClient(spa);
            expect(await store.findClient('spa')).toStrictEqual(spa);
            await store.ensureClient({ ...spa, clientId: 'spa-2' });
            expect((await store.findClient('spa-2'))?.webOrigins).toEqual(['https://app.example.com', 'http://localhost:5173']);
            expect(await store.updateClient('spa', { webOrigins: ['https://new.example.com'] })).toBe(true);
            expect(await store.findClient('spa')).toStrictEqual({ ...spa, webOrigins: ['https://new.example.com'] });
            // Other changes leave them alone; an empty list removes them.
            expect(await store.updateClient('spa', { name: 'Renamed' })).toBe(true);
            expect((await store.findClient('spa'))?.webOrigins).toEqual(['https://new.example.com']);
            expect(await store.updateClient('spa', { webOrigins: [] })).toBe(true);
            expect((await store.findClient('spa'))?.webOrigins).toEqual([]);
          });
        });

        it("listWebOrigins: every enabled client's origins, each once, in byte order; none of a disabled or removed client", async () => {
          await withStore(async (store) => {
            expect(await store.listWebOrigins()).toEqual([]);
            await store.createClient(client({ clientId: 'a', webOrigins: ['https://b.example.com', 'https://a.example.com'] }));
            await store.createClient(client({ clientId: 'b', webOrigins: ['https://a.example.com', 'http://127.0.0.1:8080'] }));
            await store.createClient(client({ clientId: 'c' }));
            await store.createClient(client({ clientId: 'off', webOrigins: ['https://off.example.com'], disabled: true }));
            expect(await store.listWebOrigins()).toEqual(['http://127.0.0.1:8080', 'https://a.example.com', 'https://b.example.com']);
            await store.setClientDisabled('b', true);
            expect(await store.listWebOrigins()).toEqual(['https://a.example.com', 'https://b.example.com']);
            await store.setClientDisabled('off', false);
            await store.updateClient('a', { webOrigins: ['https://c.example.com'] });
            expect(await store.listWebOrigins()).toEqual(['https://c.example.com', 'https://off.example.com']);
            await store.removeClient('off', t0);
            expect(await store.listWebOrigins()).toEqual(['https://c.example.com']);
          });
        });
      });

      describe('client grants', () => {
        const grant = (overrides: Partial<ClientGrantRecord> = {}): ClientGrantRecord => ({
          clientId: 'cli',
          api: apiA,
          scopes: ['write', 'read'],
          createdAt: t0,
          ...overrides,
        });

        it('saveClientGrant inserts, then replaces the grant of (client, api), keeping the scopes in the order given', async () => {
          await withDirectory(async (store) => {
            expect(await store.findClientGrant('cli', apiA)).toBeUndefined();
            await store.saveClientGrant(grant());
            expect(await store.findClientGrant('cli', apiA)).toStrictEqual(grant());
            await store.saveClientGrant(grant({ scopes: ['admin'], createdAt: t0 + 9 }));
            expect(await store.findClientGrant('cli', apiA)).toStrictEqual(grant({ scopes: ['admin'], createdAt: t0 + 9 }));
            expect(await store.listClientGrants('cli')).toHaveLength(1);
            expect(await store.findClientGrant('cli', apiB)).toBeUndefined();
            expect(await store.findClientGrant('other', apiA)).toBeUndefined();
          });
        });

        it("listClientGrants: the client's grants sorted by api, or everyone's sorted by client then api; removeClientGrant is false when there was none", async () => {
          await withDirectory(async (store) => {
            await store.createClient(client({ clientId: 'B-svc' }));
            await store.createClient(client({ clientId: 'a-svc' }));
            for (const [clientId, api] of [
              ['cli', apiB],
              ['a-svc', apiB],
              ['cli', apiA],
              ['B-svc', apiA],
            ] as const)
              await store.saveClientGrant(grant({ clientId, api }));
            expect((await store.listClientGrants('cli')).map((g) => g.api)).toEqual([apiA, apiB]);
            expect(await store.listClientGrants('cli')).toStrictEqual([grant(), grant({ api: apiB })]);
            expect((await store.listClientGrants(undefined)).map((g) => [g.clientId, g.api])).toEqual([
              ['B-svc', apiA],
              ['a-svc', apiB],
              ['cli', apiA],
              ['cli', apiB],
            ]);
            expect(await store.listClientGrants('nobody')).toEqual([]);
            expect(await store.removeClientGrant('cli', apiA)).toBe(true);
            expect(await store.removeClientGrant('cli', apiA)).toBe(false);
            expect(await store.removeClientGrant('nobody', apiB)).toBe(false);
            expect((await store.listClientGrants(undefined)).map((g) => [g.clientId, g.api])).toEqual([
              ['B-svc', apiA],
              ['a-svc', apiB],
              ['cli', apiB],
            ]);
          });
        });

        it("removing a client removes its grants, not other clients'; a client registered again under the id has none", async () => {
          await withDirectory(async (store) => {
            await store.createClient(client({ clientId: 'other' }));
            await store.saveClientGrant(grant());
            await store.saveClientGrant(grant({ api: apiB }));
            await store.saveClientGrant(grant({ clientId: 'other' }));
            expect(await store.removeClient('cli', t0)).toBe(true);
            expect(await store.listClientGrants('cli')).toEqual([]);
            expect(await store.listClientGrants(undefined)).toStrictEqual([grant({ clientId: 'other' })]);
            await store.createClient(client());
            expect(await store.findClientGrant('cli', apiA)).toBeUndefined();
          });
        });

        it('a grant for an unknown client or API is refused (a client removed meanwhile cannot be left with one)', async () => {
          await withDirectory(async (store) => {
            await expect(store.saveClientGrant(grant({ clientId: 'nobody' }))).rejects.toBeInstanceOf(MissingReferenceError);
            await expect(store.saveClientGrant(grant({ api: 'https://none.example.com' }))).rejects.toBeInstanceOf(MissingReferenceError);
            expect(await store.listClientGrants(undefined)).toEqual([]);
          });
        });
      });

      describe('takeResourceLease / releaseResourceLease', () => {
        it('one holder at a time: another is refused while the lease runs, and takes it once given back', async () => {
          await withStore(async (store) => {
            const until = (await store.databaseTime()) + 30;
            expect(await store.takeResourceLease('client:web', 'holder-a', until)).toBe(true);
            expect(await store.takeResourceLease('client:web', 'holder-b', until)).toBe(false);
            // Keys are apart.
            expect(await store.takeResourceLease('client:cli', 'holder-b', until)).toBe(true);
            // Only the holder gives it back.
            expect(await store.releaseResourceLease('client:web', 'holder-b')).toBe(false);
            expect(await store.takeResourceLease('client:web', 'holder-b', until)).toBe(false);
            expect(await store.releaseResourceLease('client:web', 'holder-a')).toBe(true);
            expect(await store.releaseResourceLease('client:web', 'holder-a')).toBe(false);
            expect(await store.takeResourceLease('client:web', 'holder-b', until)).toBe(true);
          });
        });

        it('a lease left by a crashed holder is taken over once expired, and the late holder cannot give back the new one', async () => {
          await withStore(async (store) => {
            const now = await store.databaseTime();
            expect(await store.takeResourceLease('api:https://api.example.com', 'crashed', now - 5)).toBe(true);
            expect(await store.takeResourceLease('api:https://api.example.com', 'next', now + 30)).toBe(true);
            expect(await store.takeResourceLease('api:https://api.example.com', 'third', now + 30)).toBe(false);
            expect(await store.releaseResourceLease('api:https://api.example.com', 'crashed')).toBe(false);
            expect(await store.takeResourceLease('api:https://api.example.com', 'third', now + 30)).toBe(false);
          });
        });

        it('of many simultaneous takers exactly one gets the lease', async () => {
          await withStore(async (store) => {
            const until = (await store.databaseTime()) + 30;
            const taken = await Promise.all(Array.from({ length: 8 }, (_, i) => store.takeResourceLease('client:race', `holder-${i}`, until)));
            expect(taken.filter(Boolean)).toHaveLength(1);
          });
        });

        it('a key or holder a store cannot hold (U+0000) locks nothing and fails nothing', async () => {
          await withStore(async (store) => {
            const until = (await store.databaseTime()) + 30;
            expect(await store.takeResourceLease('client:a\u0000b', 'holder', until)).toBe(true);
            expect(await store.releaseResourceLease('client:a\u0000b', 'holder')).toBe(false);
          });
        });
      });

      describe('useOnce', () => {
        it('is true the first time only; purposes and keys are apart', async () => {
          await withStore(async (store) => {
            const until = (await store.databaseTime()) + 3600;
            expect(await store.useOnce('client_assertion', 'jti-1', until)).toBe(true);
            expect(await store.useOnce('client_assertion', 'jti-1', until)).toBe(false);
            expect(await store.useOnce('client_assertion', 'jti-1', until + 60)).toBe(false);
            expect(await store.useOnce('client_assertion', 'JTI-1', until)).toBe(true);
            expect(await store.useOnce('client_assertion', 'jti-2', until)).toBe(true);
            expect(await store.useOnce('dpop', 'jti-1', until)).toBe(true);
            expect(await store.useOnce('dpop', 'jti-1', until)).toBe(false);
          });
        });

        it('takes the keys client assertions are spent under (client id and jti, nothing a store cannot hold)', async () => {
          await withStore(async (store) => {
            const until = (await store.databaseTime()) + 3600;
            const key = assertionReplayKey('svc:a', 'b');
            expect(await store.useOnce('client_assertion', key, until)).toBe(true);
            expect(await store.useOnce('client_assertion', key, until)).toBe(false);
            // The same characters split differently are another client's jti.
            expect(await store.useOnce('client_assertion', assertionReplayKey('svc', 'a:b'), until)).toBe(true);
          });
        });

        it('a key past its expiry counts as absent and is taken over; purgeExpired forgets expired keys and counts them', async () => {
          await withStore(async (store) => {
            const now = await store.databaseTime();
            expect(await store.useOnce('jti', 'expired', now - 10)).toBe(true);
            expect(await store.useOnce('jti', 'expired', now + 3600)).toBe(true);
            expect(await store.useOnce('jti', 'expired', now + 3600)).toBe(false);
            expect(await store.useOnce('jti', 'old-1', now - 100)).toBe(true);
            expect(await store.useOnce('jti', 'old-2', now - 50)).toBe(true);
            expect(await store.useOnce('jti', 'live', now + 600)).toBe(true);
            expect((await store.purgeExpired(now, 1)).usedOnce).toBe(1);
            expect((await store.purgeExpired(now)).usedOnce).toBe(1);
            expect((await store.purgeExpired(now)).usedOnce).toBe(0);
            expect(await store.useOnce('jti', 'live', now + 600)).toBe(false);
            expect(await store.useOnce('jti', 'expired', now + 600)).toBe(false);
            expect((await store.purgeExpired(now + 600)).usedOnce).toBe(1);
            expect(await store.useOnce('jti', 'live', now + 1200)).toBe(true);
          });
        });

        it('simultaneous uses of one key: exactly one is true', async () => {
          await withStore(async (store) => {
            const now = await store.databaseTime();
            const fresh = await Promise.all(Array.from({ length: 20 }, () => store.useOnce('jti', 'raced', now + 600)));
            expect(fresh.filter((first) => first)).toHaveLength(1);
            // Taking over an expired key is raced for too.
            await store.useOnce('jti', 'stale', now - 5);
            const takeovers = await Promise.all(Array.from({ length: 20 }, () => store.useOnce('jti', 'stale', now + 600)));
            expect(takeovers.filter((first) => first)).toHaveLength(1);
          });
        });
      });

      describe('the audit log', () => {
        const event = (overrides: Partial<Omit<AuditEventRecord, 'id'>> = {}): Omit<AuditEventRecord, 'id'> => ({
          at: t0 * 1000,
          event: 'user.login',
          actor: undefined,
          userId: 'user-alice',
          clientId: undefined,
          ip: '203.0.113.9',
          details: {},
          ...overrides,
        });
        const events = async (store: Store, query: Partial<AuditEventQuery> = {}) =>
          (await store.listAuditEvents({ limit: 100, ...query })).map((e) => e.event);

        it('appendAuditEvents gives increasing ids in the order given; listAuditEvents returns them newest first with every field intact', async () => {
          await withStore(async (store) => {
            expect(await store.listAuditEvents({ limit: 10 })).toEqual([]);
            await store.appendAuditEvents([]);
            const first = event({ event: 'user.login', details: { method: 'pwd', amr: ['pwd', 'otp'], nested: { n: 1, ok: true, none: null } } });
            const second = event({ at: t0 * 1000 + 1, event: 'client.created', actor: 'admin', userId: undefined, clientId: 'svc', ip: undefined });
            await store.appendAuditEvents([first, second]);
            await store.appendAuditEvents([event({ at: t0 * 1000 - 5, event: 'user.logout' })]);
            const listed = await store.listAuditEvents({ limit: 10 });
            expect(listed.map((e) => e.event)).toEqual(['user.logout', 'client.created', 'user.login']);
            const [third, secondListed, firstListed] = listed;
            expect(firstListed).toStrictEqual({ id: firstListed!.id, ...first });
            expect(secondListed).toStrictEqual({ id: secondListed!.id, ...second });
            expect(Number.isInteger(firstListed!.id)).toBe(true);
            expect(secondListed!.id).toBeGreaterThan(firstListed!.id);
            expect(third!.id).toBeGreaterThan(secondListed!.id);
          });
        });

        it('a batch is one transaction: when one event cannot be stored, none is', async () => {
          await withStore(async (store) => {
            const broken = event({ event: null as unknown as string });
            await expect(store.appendAuditEvents([event(), broken, event()])).rejects.toThrow();
            expect(await store.listAuditEvents({ limit: 10 })).toEqual([]);
          });
        });

        it('filters combine with AND: since (inclusive), until (exclusive), user, client, actor, and an event name or a prefix ending in "."', async () => {
          await withStore(async (store) => {
            const ms = t0 * 1000;
            await store.appendAuditEvents([
              event({ at: ms, event: 'user.login' }),
              event({ at: ms + 10, event: 'user.logout', userId: 'user-bob' }),
              event({ at: ms + 20, event: 'user', clientId: 'svc' }),
              event({ at: ms + 30, event: 'User.login' }),
              event({ at: ms + 40, event: 'user/other' }),
              event({ at: ms + 50, event: 'users.added', actor: 'admin' }),
              event({ at: ms + 60, event: 'mfa_reset.done', actor: 'cli', clientId: 'svc' }),
              event({ at: ms + 70, event: 'mfaXreset.done', actor: 'cli' }),
              event({ at: ms + 80, event: 'user.login.failed', userId: undefined }),
            ]);
            expect(await events(store, { event: 'user.' })).toEqual(['user.login.failed', 'user.logout', 'user.login']);
            expect(await events(store, { event: 'user.login' })).toEqual(['user.login']);
            expect(await events(store, { event: 'user.login.' })).toEqual(['user.login.failed']);
            expect(await events(store, { event: 'mfa_reset.' })).toEqual(['mfa_reset.done']);
            expect(await events(store, { event: 'user%' })).toEqual([]);
            expect(await events(store, { event: 'nothing.' })).toEqual([]);
            expect(await events(store, { userId: 'user-bob' })).toEqual(['user.logout']);
            expect(await events(store, { clientId: 'svc' })).toEqual(['mfa_reset.done', 'user']);
            expect(await events(store, { actor: 'cli' })).toEqual(['mfaXreset.done', 'mfa_reset.done']);
            expect(await events(store, { since: ms + 20, until: ms + 50 })).toEqual(['user/other', 'User.login', 'user']);
            expect(await events(store, { since: ms + 80 })).toEqual(['user.login.failed']);
            expect(await events(store, { until: ms + 1 })).toEqual(['user.login']);
            expect(await events(store, { event: 'user.', userId: 'user-alice', until: ms + 80 })).toEqual(['user.login']);
            expect(await events(store, { actor: 'cli', clientId: 'svc', event: 'mfa_reset.done' })).toEqual(['mfa_reset.done']);
            expect(await events(store, { actor: 'cli', userId: 'user-bob' })).toEqual([]);
          });
        });

        it('pages newest first with limit and beforeId, which combine with the filters; limit is capped at 500', async () => {
          await withStore(async (store) => {
            const ms = t0 * 1000;
            await store.appendAuditEvents(
              Array.from({ length: 620 }, (_, n) => event({ at: ms + n, event: n % 2 === 0 ? 'user.login' : 'token.issued', details: { n } })),
            );
            expect(await store.listAuditEvents({ limit: 1000 })).toHaveLength(500);
            expect(await store.listAuditEvents({ limit: 0 })).toEqual([]);
            const seen: number[] = [];
            let beforeId: number | undefined;
            for (;;) {
              const page = await store.listAuditEvents({ limit: 200, beforeId });
              if (page.length === 0) break;
              seen.push(...page.map((e) => Number(e.details.n)));
              beforeId = page.at(-1)!.id;
            }
            expect(seen).toEqual(Array.from({ length: 620 }, (_, n) => 619 - n));
            const logins = await store.listAuditEvents({ limit: 3, event: 'user.login', since: ms + 100 });
            expect(logins.map((e) => e.details.n)).toEqual([618, 616, 614]);
            const next = await store.listAuditEvents({ limit: 3, event: 'user.login', since: ms + 100, beforeId: logins.at(-1)!.id });
            expect(next.map((e) => e.details.n)).toEqual([612, 610, 608]);
          });
        });

        it('purgeAuditEvents removes the events older than `before`, at most batchSize at a time, oldest first', async () => {
          await withStore(async (store) => {
            await store.appendAuditEvents(Array.from({ length: 10 }, (_, n) => event({ at: 1000 + n, details: { n } })));
            expect(await store.purgeAuditEvents(1005, 2)).toBe(2);
            expect((await store.listAuditEvents({ limit: 100 })).map((e) => e.at).at(-1)).toBe(1002);
            expect(await store.purgeAuditEvents(1005)).toBe(3);
            expect(await store.purgeAuditEvents(1005)).toBe(0);
            expect((await store.listAuditEvents({ limit: 100 })).map((e) => e.at)).toEqual([1009, 1008, 1007, 1006, 1005]);
            // Ids are never handed out again, even once the newest events are gone.
            const newest = (await store.listAuditEvents({ limit: 1 }))[0]!.id;
            expect(await store.purgeAuditEvents(2000)).toBe(5);
            await store.appendAuditEvents([event({ at: 3000 })]);
            expect((await store.listAuditEvents({ limit: 1 }))[0]!.id).toBeGreaterThan(newest);
          });
        });
      });
    });

    describe('dynamic client registration', () => {
      const initialToken = (overrides: Partial<RegistrationTokenRecord> = {}): RegistrationTokenRecord => ({
        tokenHash: 'it-hash',
        createdAt: t0,
        expiresAt: t0 + 3600,
        usedAt: undefined,
        clientId: undefined,
        ...overrides,
      });
      const registered = (overrides: Partial<ClientRecord> = {}): ClientRecord =>
        client({
          clientId: 'dyn_abc',
          name: 'Registered',
          secretHash: 'sha256-secret',
          redirectUris: ['https://rp.example.com/cb'],
          grantTypes: ['authorization_code', 'client_credentials'],
          requirePkce: false,
          webOrigins: ['https://rp.example.com'],
          registrationAccessTokenHash: 'sha256-rat',
          tokenEndpointAuthMethod: 'client_secret_post',
          ...overrides,
        });

      it('createRegistrationToken and findRegistrationToken keep every field; a stored digest is a DuplicateError', async () => {
        await withStore(async (store) => {
          expect(await store.findRegistrationToken('it-hash')).toBeUndefined();
          await store.createRegistrationToken(initialToken());
          expect(await store.findRegistrationToken('it-hash')).toStrictEqual(initialToken());
          await expect(store.createRegistrationToken(initialToken({ expiresAt: t0 + 60 }))).rejects.toBeInstanceOf(DuplicateError);
          expect(await store.findRegistrationToken('IT-HASH')).toBeUndefined();
          expect(await store.findRegistrationToken('it-hash\u0000')).toBeUndefined();
        });
      });

      it('useRegistrationToken spends a token once, and never an unknown or expired one', async () => {
        await withStore(async (store) => {
          await store.createRegistrationToken(initialToken());
          await store.createRegistrationToken(initialToken({ tokenHash: 'expiring', expiresAt: t0 + 10 }));
          expect(await store.useRegistrationToken('unknown', t0)).toBe(false);
          expect(await store.useRegistrationToken('it-hash\u0000', t0)).toBe(false);
          expect(await store.useRegistrationToken('expiring', t0 + 10)).toBe(false);
          expect(await store.findRegistrationToken('expiring')).toMatchObject({ usedAt: undefined });
          expect(await store.useRegistrationToken('it-hash', t0 + 5)).toBe(true);
          expect(await store.findRegistrationToken('it-hash')).toStrictEqual(initialToken({ usedAt: t0 + 5 }));
          expect(await store.useRegistrationToken('it-hash', t0 + 6)).toBe(false);
          expect(await store.useRegistrationToken('expiring', t0 + 9)).toBe(true);
        });
      });

      it('simultaneous uses of one token: exactly one is true', async () => {
        await withStore(async (store) => {
          await store.createRegistrationToken(initialToken());
          const results = await Promise.all(Array.from({ length: 20 }, () => store.useRegistrationToken('it-hash', t0 + 1)));
          expect(results.filter((won) => won)).toHaveLength(1);
        });
      });

      it('registerClient spends the token and stores the client with its registration fields, in one step', async () => {
        await withStore(async (store) => {
          await store.createRegistrationToken(initialToken());
          expect(await store.registerClient(registered(), 'it-hash', t0 + 1)).toBe(true);
          expect(await store.findClient('dyn_abc')).toStrictEqual(registered());
          expect(await store.findRegistrationToken('it-hash')).toStrictEqual(initialToken({ usedAt: t0 + 1, clientId: 'dyn_abc' }));
          // Spent: a second registration with it stores nothing.
          expect(await store.registerClient(registered({ clientId: 'dyn_other' }), 'it-hash', t0 + 2)).toBe(false);
          expect(await store.findClient('dyn_other')).toBeUndefined();
          expect(await store.registerClient(registered({ clientId: 'dyn_other' }), 'unknown', t0 + 2)).toBe(false);
          expect(await store.findClient('dyn_other')).toBeUndefined();
          expect((await store.listClients()).map((c) => c.clientId)).toEqual(['dyn_abc']);
        });
      });

      it('registerClient refuses an expired token; a taken client_id is a DuplicateError that leaves the token unspent', async () => {
        await withStore(async (store) => {
          await store.createClient(client({ clientId: 'dyn_taken' }));
          await store.createRegistrationToken(initialToken());
          expect(await store.registerClient(registered(), 'it-hash', t0 + 3600)).toBe(false);
          expect(await store.findClient('dyn_abc')).toBeUndefined();
          await expect(store.registerClient(registered({ clientId: 'dyn_taken' }), 'it-hash', t0 + 1)).rejects.toBeInstanceOf(DuplicateError);
          expect(await store.findRegistrationToken('it-hash')).toStrictEqual(initialToken());
          expect(await store.findClient('dyn_taken')).toMatchObject({ registrationAccessTokenHash: undefined, tokenEndpointAuthMethod: undefined });
          expect(await store.registerClient(registered(), 'it-hash', t0 + 1)).toBe(true);
        });
      });

      it('simultaneous registrations with one token: exactly one client is stored', async () => {
        await withStore(async (store) => {
          await store.createRegistrationToken(initialToken());
          const results = await Promise.all(
            Array.from({ length: 10 }, (_, n) => store.registerClient(registered({ clientId: `dyn_${n}` }), 'it-hash', t0 + 1)),
          );
          expect(results.filter((won) => won)).toHaveLength(1);
          const stored = await store.listClients();
          expect(stored).toHaveLength(1);
          expect((await store.findRegistrationToken('it-hash'))?.clientId).toBe(stored[0]!.clientId);
        });
      });

      it('createClient and ensureClient store no registration fields: only registerClient does', async () => {
        await withStore(async (store) => {
          await store.createClient(registered({ clientId: 'made-by-operator' }));
          await store.ensureClient(registered({ clientId: 'built-in' }));
          for (const id of ['made-by-operator', 'built-in']) {
            expect(await store.findClient(id)).toMatchObject({ registrationAccessTokenHash: undefined, tokenEndpointAuthMethod: undefined });
          }
        });
      });

      it('updateRegisteredClient replaces the metadata and the method, and keeps, replaces or removes the secret', async () => {
        await withStore(async (store) => {
          await store.createRegistrationToken(initialToken());
          await store.registerClient(registered(), 'it-hash', t0 + 1);
          await store.rotateClientSecret('dyn_abc', { hash: 'sha256-rotated', sealed: undefined }, t0 + 600);
          const changes = {
            name: 'Renamed',
            redirectUris: ['https://rp.example.com/new'],
            postLogoutRedirectUris: ['https://rp.example.com/bye'],
            webOrigins: ['https://rp.example.com', 'https://other.example.com'],
            backchannelLogoutUri: 'https://rp.example.com/bcl',
            grantTypes: ['client_credentials' as const],
            requirePkce: false,
            jwksUri: undefined,
            jwks: undefined,
          };
          expect(await store.updateRegisteredClient('dyn_abc', { changes, tokenEndpointAuthMethod: 'client_secret_basic', secret: 'keep' })).toBe(true);
          expect(await store.findClient('dyn_abc')).toStrictEqual(
            registered({
              ...changes,
              secretHash: 'sha256-rotated',
              previousSecretHash: 'sha256-secret',
              previousSecretExpiresAt: t0 + 600,
              tokenEndpointAuthMethod: 'client_secret_basic',
            }),
          );
          // A new secret (sealed, for client_secret_jwt): the previous one goes with the old.
          expect(
            await store.updateRegisteredClient('dyn_abc', {
              changes: {},
              tokenEndpointAuthMethod: 'client_secret_jwt',
              secret: { hash: 'sha256-new', sealed: 'sealed-new' },
            }),
          ).toBe(true);
          expect(await store.findClient('dyn_abc')).toMatchObject({
            name: 'Renamed',
            secretHash: 'sha256-new',
            secretSealed: 'sealed-new',
            previousSecretHash: undefined,
            previousSecretSealed: undefined,
            previousSecretExpiresAt: undefined,
            tokenEndpointAuthMethod: 'client_secret_jwt',
            registrationAccessTokenHash: 'sha256-rat',
          });
          // Keys instead of a secret: the secret is gone, the backchannel URI cleared.
          const jwks = { keys: [{ kty: 'EC', crv: 'P-256', x: 'x', y: 'y' }] };
          expect(
            await store.updateRegisteredClient('dyn_abc', {
              changes: { jwks, jwksUri: undefined, backchannelLogoutUri: undefined },
              tokenEndpointAuthMethod: 'private_key_jwt',
              secret: undefined,
            }),
          ).toBe(true);
          expect(await store.findClient('dyn_abc')).toMatchObject({
            jwks,
            jwksUri: undefined,
            backchannelLogoutUri: undefined,
            secretHash: undefined,
            secretSealed: undefined,
            tokenEndpointAuthMethod: 'private_key_jwt',
          });
          expect(await store.updateRegisteredClient('nobody', { changes: {}, tokenEndpointAuthMethod: 'none', secret: undefined })).toBe(false);
        });
      });

      it('removeClient removes a registered client like any other', async () => {
        await withStore(async (store) => {
          await store.createRegistrationToken(initialToken());
          await store.registerClient(registered(), 'it-hash', t0 + 1);
          expect(await store.removeClient('dyn_abc', t0 + 2)).toBe(true);
          expect(await store.findClient('dyn_abc')).toBeUndefined();
          // The record of which registration spent the token stays until it expires.
          expect(await store.findRegistrationToken('it-hash')).toMatchObject({ clientId: 'dyn_abc' });
        });
      });

      it('purgeExpired removes expired initial access tokens, used or not, at most batchSize at a time, and counts them', async () => {
        await withStore(async (store) => {
          await store.createRegistrationToken(initialToken({ tokenHash: 'old-1', expiresAt: t0 - 10 }));
          await store.createRegistrationToken(initialToken({ tokenHash: 'old-2', expiresAt: t0 }));
          await store.createRegistrationToken(initialToken({ tokenHash: 'used', expiresAt: t0 - 5, usedAt: t0 - 100, clientId: 'dyn_gone' }));
          await store.createRegistrationToken(initialToken({ tokenHash: 'live', expiresAt: t0 + 1 }));
          expect((await store.purgeExpired(t0, 2)).registrationTokens).toBe(2);
          expect((await store.purgeExpired(t0)).registrationTokens).toBe(1);
          expect((await store.purgeExpired(t0)).registrationTokens).toBe(0);
          for (const hash of ['old-1', 'old-2', 'used']) expect(await store.findRegistrationToken(hash)).toBeUndefined();
          expect(await store.findRegistrationToken('live')).toBeDefined();
          expect((await store.purgeExpired(t0 + 1)).registrationTokens).toBe(1);
        });
      });
    });

    describe('standard claims of a person and the claims an authorization request names', () => {
      const fullProfile: UserProfileClaims = {
        given_name: 'Alice',
        family_name: 'Liddell',
        middle_name: 'Pleasance',
        nickname: 'Al',
        profile: 'https://example.com/~alice',
        picture: 'https://example.com/alice.png',
        website: 'https://alice.example',
        gender: 'female',
        birthdate: '0000-05-04',
        zoneinfo: 'Europe/London',
        locale: 'en-GB',
        phone_number: '+44 20 7946 0958;ext=12',
        phone_number_verified: false,
        address: {
          formatted: 'Christ Church\nOxford OX1 1DP\nUnited Kingdom',
          street_address: 'Christ Church, St Aldates',
          locality: 'Oxford',
          region: 'Oxfordshire',
          postal_code: 'OX1 1DP',
          country: 'GB',
        },
      };
      const requested: RequestedClaims = { userinfo: ['phone_number', 'address', 'given_name'], idToken: ['email', 'updated_at'] };

      it('createUser, every find and listUsers round-trip the profile (an address object, a false phone_number_verified) and updatedAt', async () => {
        await withStore(async (store) => {
          const alice = user({ profile: fullProfile, updatedAt: t0 + 7 });
          const bob = user({ username: 'bob', profile: { phone_number: '+1 425 555 1212', phone_number_verified: true, address: { country: 'US' } } });
          await store.createUser(alice);
          await store.createUser(bob);
          expect(await store.findUserById('user-alice')).toStrictEqual(alice);
          expect(await store.findUserByUsername('ALICE')).toStrictEqual(alice);
          expect(await store.findUsersByEmail('alice@example.com')).toStrictEqual([alice]);
          expect(await store.listUsers()).toStrictEqual([alice, bob]);
          expect((await store.findUserById('user-bob'))?.profile.phone_number_verified).toBe(true);
          expect((await store.findUserById('user-alice'))?.profile.phone_number_verified).toBe(false);
          // Granted a role, a user is read through another query: the profile comes along there too.
          await store.createRole({ name: 'ops', description: undefined, permissions: [], createdAt: t0 });
          expect(await store.grantRole('user-alice', 'ops', t0)).toBe(true);
          expect(await store.listRoleMembers('ops')).toStrictEqual([{ ...alice, roles: ['ops'] }]);
        });
      });

      it('a user made with no profile reads {} and its createdAt as updatedAt; createUserWithIdentity keeps both', async () => {
        await withStore(async (store) => {
          await store.createUser(user());
          expect(await store.findUserById('user-alice')).toMatchObject({ profile: {}, updatedAt: t0 });
          await store.createConnector({ id: 'sso', type: 'oidc', name: 'SSO', config: {}, secret: undefined, createdAt: t0 });
          const upstream = user({ username: 'carol', source: 'sso', createdAt: t0 + 3, profile: { locale: 'fr-CA' } });
          expect(upstream.updatedAt).toBe(t0 + 3);
          await store.createUserWithIdentity(upstream, { connectorId: 'sso', subject: 'c', userId: 'user-carol', createdAt: t0 + 3, lastSignInAt: t0 + 3 });
          expect(await store.findUserById('user-carol')).toStrictEqual(upstream);
        });
      });

      it('updateUser replaces each member given and nothing else, and moves updatedAt', async () => {
        await withStore(async (store) => {
          await store.createUser(user({ profile: fullProfile }));
          await store.createUser(user({ username: 'bob' }));
          // name only
          expect(await store.updateUser('alice', { name: 'Alice P. Liddell' }, t0 + 10)).toBe(true);
          expect(await store.findUserById('user-alice')).toStrictEqual(user({ profile: fullProfile, name: 'Alice P. Liddell', updatedAt: t0 + 10 }));
          // null clears the name
          expect(await store.updateUser('alice', { name: null }, t0 + 20)).toBe(true);
          expect(await store.findUserById('user-alice')).toStrictEqual(user({ profile: fullProfile, name: undefined, updatedAt: t0 + 20 }));
          // the profile is replaced as a whole (the caller merges)
          expect(await store.updateUser('alice', { profile: { nickname: 'Ally' } }, t0 + 30)).toBe(true);
          expect(await store.findUserById('user-alice')).toStrictEqual(user({ profile: { nickname: 'Ally' }, name: undefined, updatedAt: t0 + 30 }));
          expect(await store.updateUser('alice', { profile: {} }, t0 + 31)).toBe(true);
          expect((await store.findUserById('user-alice'))?.profile).toStrictEqual({});
          // all three at once, found by username in any ASCII case
          expect(await store.updateUser('ALICE', { email: 'alice@elsewhere.example', name: 'Alice', profile: fullProfile }, t0 + 40)).toBe(true);
          expect(await store.findUserById('user-alice')).toStrictEqual(
            user({ email: 'alice@elsewhere.example', name: 'Alice', profile: fullProfile, updatedAt: t0 + 40 }),
          );
          expect(await store.findUsersByEmail('alice@elsewhere.example')).toHaveLength(1);
          // nothing given: only updatedAt moves
          expect(await store.updateUser('alice', {}, t0 + 50)).toBe(true);
          expect(await store.findUserById('user-alice')).toStrictEqual(
            user({ email: 'alice@elsewhere.example', name: 'Alice', profile: fullProfile, updatedAt: t0 + 50 }),
          );
          // unknown username
          expect(await store.updateUser('nobody', { name: 'X' }, t0 + 60)).toBe(false);
          expect(await store.findUserById('user-bob')).toStrictEqual(user({ username: 'bob' }));
        });
      });

      it("updateUser: an operator's new email counts as verified; the same one in another case keeps the flag it had", async () => {
        await withStore(async (store) => {
          await store.createUser(user({ emailVerified: false }));
          expect(await store.updateUser('alice', { email: 'ALICE@example.com' }, t0 + 1)).toBe(true);
          expect(await store.findUserById('user-alice')).toMatchObject({ email: 'ALICE@example.com', emailVerified: false, updatedAt: t0 + 1 });
          expect(await store.updateUser('alice', { email: 'alice@new.example' }, t0 + 2)).toBe(true);
          expect(await store.findUserById('user-alice')).toMatchObject({ email: 'alice@new.example', emailVerified: true, updatedAt: t0 + 2 });
          expect(await store.updateUser('alice', { name: 'Alice' }, t0 + 3)).toBe(true);
          expect(await store.findUserById('user-alice')).toMatchObject({ email: 'alice@new.example', emailVerified: true });
        });
      });

      it('updateUserProfile moves updatedAt and leaves the profile claims alone; the same name and email again move nothing', async () => {
        await withStore(async (store) => {
          await store.createUser(user({ profile: fullProfile }));
          expect(await store.updateUserProfile('user-alice', { name: 'Alice', email: 'alice@example.com' }, t0 + 15)).toBe(true);
          expect(await store.findUserById('user-alice')).toStrictEqual(user({ name: 'Alice', profile: fullProfile, updatedAt: t0 + 15 }));
          expect(await store.updateUserProfile('user-alice', { name: 'Alice', email: 'alice@example.com' }, t0 + 25)).toBe(true);
          expect((await store.findUserById('user-alice'))!.updatedAt).toBe(t0 + 15);
          expect(await store.updateUserProfile('user-alice', { name: undefined, email: 'alice@example.com' }, t0 + 35)).toBe(true);
          expect((await store.findUserById('user-alice'))!.updatedAt).toBe(t0 + 35);
        });
      });

      it('authorization codes keep the claims asked for, through consumption; none is undefined', async () => {
        await withSeededStore(async (store) => {
          const c = authorizationCode({ claims: requested });
          await store.createAuthorizationCode(c);
          expect(await store.findAuthorizationCode('code-hash-1')).toStrictEqual(c);
          const consumed = await store.consumeAuthorizationCode('code-hash-1', t0 + 1, { accessTokenJti: 'j', refreshFamilyId: 'f' });
          expect(consumed).toStrictEqual({ ...c, consumedAt: t0 + 1, accessTokenJti: 'j', refreshFamilyId: 'f' });
          const empty = authorizationCode({ codeHash: 'empty', claims: { userinfo: [], idToken: ['auth_time'] } });
          await store.createAuthorizationCode(empty);
          expect((await store.findAuthorizationCode('empty'))?.claims).toStrictEqual({ userinfo: [], idToken: ['auth_time'] });
          await store.createAuthorizationCode(authorizationCode({ codeHash: 'none' }));
          const none = await store.consumeAuthorizationCode('none', t0 + 1, { accessTokenJti: 'j2', refreshFamilyId: 'f2' });
          expect(none?.claims).toBeUndefined();
        });
      });

      it('refresh tokens keep the claims asked for, and so do a rotated successor and a grace successor', async () => {
        await withSeededStore(async (store) => {
          const first = refreshToken({ id: 'p', tokenHash: 'p', claims: requested });
          await store.createRefreshToken(first);
          expect(await store.findRefreshToken('p')).toStrictEqual(first);
          const next = refreshToken({ id: 'n', tokenHash: 'n', parentId: 'p', claims: requested, createdAt: t0 + 1 });
          expect(await store.rotateRefreshToken('p', next, t0 + 1)).toBe(true);
          expect(await store.findRefreshToken('n')).toStrictEqual(next);
          expect(await store.findRefreshToken('p')).toStrictEqual({ ...first, rotatedAt: t0 + 1 });
          const grace = refreshToken({ id: 'g', tokenHash: 'g', parentId: 'p', claims: requested, createdAt: t0 + 2 });
          expect(await store.addGraceSuccessor('p', grace, { limit: 2, liveBranches: 5, now: t0 + 2 })).toBe(true);
          expect(await store.findRefreshToken('g')).toStrictEqual(grace);
          await store.createRefreshToken(refreshToken({ id: 'e', tokenHash: 'e', familyId: 'other' }));
          expect((await store.findRefreshToken('e'))?.claims).toBeUndefined();
        });
      });
    });

    // --- Pushed authorization requests ---
    describe('pushed authorization requests', () => {
      const pushed = (overrides: Partial<PushedRequestRecord> = {}): PushedRequestRecord => ({
        requestHash: 'par-hash',
        clientId: 'cli',
        // Byte for byte, whatever a client sends: non-ASCII, quotes, a U+0000 (which PostgreSQL text cannot hold raw).
        parameters: { client_id: 'cli', response_type: 'code', redirect_uri: 'https://rp.example.com/cb', state: 's "1"', nonce: 'n\u0000ü', scope: 'openid' },
        createdAt: t0,
        expiresAt: t0 + 60,
        usedAt: undefined,
        ...overrides,
      });

      it('usePushedRequest returns the request, every field intact and marked used, to its one caller; a stored digest is a DuplicateError', async () => {
        await withStore(async (store) => {
          await store.createPushedRequest(pushed());
          await expect(store.createPushedRequest(pushed({ clientId: 'other' }))).rejects.toBeInstanceOf(DuplicateError);
          expect(await store.usePushedRequest('par-hash', 'cli', t0 + 5)).toStrictEqual(pushed({ usedAt: t0 + 5 }));
          // Replayed: nothing, however soon and from whichever instance.
          expect(await store.usePushedRequest('par-hash', 'cli', t0 + 5)).toBeUndefined();
          expect(await store.usePushedRequest('par-hash', 'cli', t0 + 6)).toBeUndefined();
        });
      });

      it("another client's, an unknown or an expired request is never returned, and another client's attempt leaves it unused", async () => {
        await withStore(async (store) => {
          await store.createPushedRequest(pushed());
          await store.createPushedRequest(pushed({ requestHash: 'expiring' }));
          expect(await store.usePushedRequest('par-hash', 'attacker', t0 + 1)).toBeUndefined();
          expect(await store.usePushedRequest('par-hash', 'CLI', t0 + 1)).toBeUndefined();
          expect(await store.usePushedRequest('par-hash', 'cli\u0000', t0 + 1)).toBeUndefined();
          expect(await store.usePushedRequest('PAR-HASH', 'cli', t0 + 1)).toBeUndefined();
          expect(await store.usePushedRequest('unknown', 'cli', t0 + 1)).toBeUndefined();
          expect(await store.usePushedRequest('par-hash\u0000', 'cli', t0 + 1)).toBeUndefined();
          // expires_at is the first second it no longer works.
          expect(await store.usePushedRequest('expiring', 'cli', t0 + 60)).toBeUndefined();
          expect(await store.usePushedRequest('par-hash', 'cli', t0 + 59)).toMatchObject({ clientId: 'cli', usedAt: t0 + 59 });
        });
      });

      it('simultaneous uses of one request: exactly one gets it', async () => {
        await withStore(async (store) => {
          await store.createPushedRequest(pushed());
          const results = await Promise.all(Array.from({ length: 20 }, (_, n) => store.usePushedRequest('par-hash', 'cli', t0 + 1 + (n % 3))));
          expect(results.filter((r) => r !== undefined)).toHaveLength(1);
        });
      });

      it('purgeExpired removes expired pushed requests, used or not, at most batchSize at a time, and counts them', async () => {
        await withStore(async (store) => {
          await store.createPushedRequest(pushed({ requestHash: 'old-1', expiresAt: t0 - 10 }));
          await store.createPushedRequest(pushed({ requestHash: 'old-2', expiresAt: t0 }));
          await store.createPushedRequest(pushed({ requestHash: 'used', expiresAt: t0 - 5, usedAt: t0 - 30 }));
          await store.createPushedRequest(pushed({ requestHash: 'live', expiresAt: t0 + 1 }));
          expect((await store.purgeExpired(t0, 2)).pushedRequests).toBe(2);
          expect((await store.purgeExpired(t0)).pushedRequests).toBe(1);
          expect((await store.purgeExpired(t0)).pushedRequests).toBe(0);
          expect(await store.usePushedRequest('live', 'cli', t0)).toBeDefined();
          expect((await store.purgeExpired(t0 + 1)).pushedRequests).toBe(1);
        });
      });

      it("keeps a client's requirePar (createClient, ensureClient, listClients); operator-made clients default to false", async () => {
        await withStore(async (store) => {
          await store.createClient(client({ clientId: 'par-only', requirePar: true }));
          await store.ensureClient(client({ clientId: 'built-in', builtIn: true }));
          await store.ensureClient(client({ clientId: 'par-only', requirePar: false }));
          expect(await store.findClient('par-only')).toEqual(client({ clientId: 'par-only', requirePar: true }));
          expect((await store.listClients()).map((c) => [c.clientId, c.requirePar])).toEqual([
            ['built-in', false],
            ['par-only', true],
          ]);
        });
      });
    });

    describe('configuration apply', () => {
      const managedBy = '/etc/latchkey/latchkey.yaml';
      const reports = { ...api({ identifier: 'https://reports.example.com', scopes: ['read', 'write'] }), managedBy };
      const machine = { ...client({ clientId: 'machine', secretHash: 'hash-1', grantTypes: ['client_credentials'], requirePkce: false }), managedBy };
      const grant = { clientId: 'machine', api: reports.identifier, scopes: ['read'], createdAt: t0 };
      const sso = {
        id: 'sso',
        type: 'oidc' as const,
        name: 'SSO',
        config: { issuer: 'https://idp.example.com', clientId: 'latchkey' },
        secret: 'sealed-1',
        createdAt: t0,
        managedBy,
      };
      const analyst = {
        name: 'analyst',
        description: undefined,
        permissions: [{ api: reports.identifier, scope: 'read' }],
        groups: ['data'],
        createdAt: t0,
        managedBy,
      };

      /** What a configuration governs, as the store reads it back. */
      async function contents(store: Store) {
        return {
          apis: await store.listApis(),
          roles: (await store.listRoles()).filter((r) => !r.builtIn),
          clients: await store.listClients(),
          grants: await store.listClientGrants(undefined),
          connectors: await store.listConnectors(),
        };
      }

      it('applyConfiguration creates, replaces and deletes APIs, roles, clients with their grants and connectors, each with its managedBy', async () => {
        await withStore(async (store) => {
          await store.applyConfiguration([
            { kind: 'create', object: 'api', record: reports },
            { kind: 'create', object: 'role', record: analyst },
            { kind: 'create', object: 'client', record: machine, grants: [grant] },
            { kind: 'create', object: 'connector', record: sso },
          ]);
          expect(await store.findApi(reports.identifier)).toEqual(reports);
          expect(await store.findRole('analyst')).toEqual({ ...analyst, builtIn: false, members: 0 });
          expect(await store.findClient('machine')).toEqual(machine);
          expect(await store.listClientGrants('machine')).toEqual([grant]);
          expect(await store.findConnector('sso')).toEqual({ ...sso, position: 1 });

          await store.applyConfiguration([
            { kind: 'update', object: 'api', record: { ...reports, name: 'Reports', scopes: ['read'] } },
            { kind: 'update', object: 'role', record: { ...analyst, description: 'Reads reports', groups: ['analytics'] } },
            { kind: 'update', object: 'client', record: { ...machine, name: 'Machine', secretHash: 'hash-2', managedBy: '/srv/other.yaml' }, grants: [] },
            { kind: 'update', object: 'connector', record: { ...sso, name: 'Corporate SSO', secret: 'sealed-2' } },
          ]);
          expect(await store.findApi(reports.identifier)).toMatchObject({ name: 'Reports', scopes: ['read'], managedBy });
          expect(await store.findRole('analyst')).toMatchObject({ description: 'Reads reports', groups: ['analytics'], permissions: analyst.permissions });
          expect(await store.findClient('machine')).toMatchObject({ name: 'Machine', secretHash: 'hash-2', managedBy: '/srv/other.yaml' });
          expect(await store.listClientGrants('machine')).toEqual([]);
          expect(await store.findConnector('sso')).toMatchObject({ name: 'Corporate SSO', secret: 'sealed-2', position: 1 });

          await store.applyConfiguration([
            { kind: 'delete', object: 'client', id: 'machine', now: t0 + 5 },
            { kind: 'delete', object: 'role', id: 'analyst' },
            { kind: 'delete', object: 'connector', id: 'sso' },
            { kind: 'delete', object: 'api', id: reports.identifier },
          ]);
          expect(await contents(store)).toEqual({ apis: [], roles: [], clients: [], grants: [], connectors: [] });
          // The client's removal is remembered as removeClient remembers it: a client made again inherits no token.
          await store.createClient(client({ clientId: 'machine' }));
          expect((await store.findClient('machine'))?.tokensRevokedAt).toBe(t0 + 5);
        });
      });

      it('applyConfiguration is all or nothing: a change failing in the middle leaves none of them applied', async () => {
        await withStore(async (store) => {
          await store.applyConfiguration([{ kind: 'create', object: 'client', record: machine, grants: [] }]);
          const before = await contents(store);
          const failing: ConfigurationChange[] = [
            { kind: 'create', object: 'api', record: reports },
            { kind: 'create', object: 'role', record: analyst },
            { kind: 'update', object: 'client', record: { ...machine, name: 'Renamed' }, grants: [grant] },
            // Taken already: the transaction fails here.
            { kind: 'create', object: 'client', record: machine, grants: [] },
            { kind: 'create', object: 'connector', record: sso },
          ];
          await expect(store.applyConfiguration(failing)).rejects.toBeInstanceOf(DuplicateError);
          expect(await contents(store)).toEqual(before);
          // An update or deletion of something that is not there fails the same way.
          await expect(
            store.applyConfiguration([
              { kind: 'create', object: 'api', record: reports },
              { kind: 'delete', object: 'role', id: 'ghost' },
            ]),
          ).rejects.toBeInstanceOf(MissingReferenceError);
          await expect(
            store.applyConfiguration([
              { kind: 'create', object: 'api', record: reports },
              { kind: 'update', object: 'connector', record: sso },
            ]),
          ).rejects.toBeInstanceOf(MissingReferenceError);
          expect(await contents(store)).toEqual(before);
        });
      });
    });
  });
}
