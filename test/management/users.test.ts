/**
 * /api/v1/users through app.inject: a person added, read, changed, disabled, given a password,
 * signed out, granted roles, unlinked and removed with the rules of the `users *` commands; every
 * answer checked against the served OpenAPI document (helpers/management.ts).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { verifyPassword } from '../../src/crypto/password.js';
import { addClient, addUser, testApp, type TestApp } from '../helpers/app.js';
import { tokensFor } from '../helpers/flows.js';
import { allManagementScopes, managementHarness } from '../helpers/management.js';
import { session } from '../helpers/records.js';

let t: TestApp;
let h: Awaited<ReturnType<typeof managementHarness>>;

beforeEach(async () => {
  t = await testApp();
  h = await managementHarness(t);
});
afterEach(async () => {
  // Each test's answers were all validated; a test that checked none would prove nothing.
  expect(h.answers.checked).toBeGreaterThan(0);
  await t.close();
});

async function events(event: string) {
  await t.app.services.auditTrail.flush();
  return t.store.listAuditEvents({ event, limit: 100 });
}

/** A live browser session of this person, as a sign-in leaves one. */
async function signedIn(userId: string, idHash: string): Promise<void> {
  const now = Math.floor(t.clock());
  await t.store.createSession(session({ idHash, userId, createdAt: now, expiresAt: now + 3600, lastSeenAt: now }));
}

describe('management API: users', () => {
  it('adds a person with a profile and a role; a password the server makes is answered once and works, and is never read back', async () => {
    await t.store.createRole({ name: 'editor', description: undefined, permissions: [], createdAt: 1_800_000_000 });
    const created = await h.call('POST', '/api/v1/users', {
      body: {
        username: 'gina',
        email: 'gina@example.com',
        name: 'Gina Example',
        profile: { given_name: 'Gina', locale: 'fr-CA', address: { locality: 'Montréal', country: 'CA' } },
        roles: ['editor'],
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    const body = created.json();
    expect(body).toMatchObject({
      username: 'gina',
      email: 'gina@example.com',
      name: 'Gina Example',
      source: 'local',
      disabled: false,
      roles: ['editor'],
      direct_roles: ['editor'],
      profile: { given_name: 'Gina', locale: 'fr-CA', address: { locality: 'Montréal', country: 'CA' } },
    });
    expect(body.password).toMatch(/^[A-Za-z2-9]{20}$/);
    expect(created.headers.location).toBe('/api/v1/users/gina');
    const stored = await t.store.findUserByUsername('gina');
    expect(stored?.passwordHash).not.toContain(body.password);
    expect(await verifyPassword(body.password, stored?.passwordHash ?? '')).toBe(true);

    const read = await h.call('GET', '/api/v1/users/GINA');
    expect(read.statusCode).toBe(200);
    expect(read.json().password).toBeUndefined();
    expect(read.headers.etag).toBe(created.headers.etag);
    const [event] = await events('user.created');
    expect(event?.details).toMatchObject({ username: 'gina', via: 'api' });
    expect(JSON.stringify(await t.store.listAuditEvents({ limit: 100 }))).not.toContain(body.password);

    // A password given is kept and not answered.
    const given = await h.call('POST', '/api/v1/users', { body: { username: 'hal', email: 'hal@example.com', password: 'a long enough password' } });
    expect(given.statusCode).toBe(201);
    expect(given.json().password).toBeUndefined();
    expect((await h.call('POST', '/api/v1/users', { body: { username: 'HAL', email: 'x@example.com' } })).statusCode).toBe(409);
  });

  it('bad input is a 400 naming each field, with the commands’ rules, and nothing is stored', async () => {
    const res = await h.call('POST', '/api/v1/users', {
      body: {
        username: 'bad name!',
        email: 'not-an-email',
        password: 'short',
        profile: { website: 'javascript:alert(1)', birthdate: 'yesterday', phone_number_verified: true },
        roles: ['nobody-role'],
      },
    });
    expect(res.statusCode).toBe(400);
    const paths = res.json<{ errors: { path: string; message: string }[] }>().errors.map((e) => e.path);
    expect(paths).toEqual(expect.arrayContaining(['/username', '/email', '/password', '/profile/website', '/profile/birthdate', '/roles/0']));
    expect(res.json().errors.find((e: { path: string }) => e.path === '/profile/website').message).not.toContain('--');
    expect((await t.store.listUsers()).map((u) => u.username)).toEqual(['admin']);
    const unknown = await h.call('POST', '/api/v1/users', { body: { username: 'ok', email: 'ok@example.com', colour: 'red' } });
    expect(unknown.statusCode).toBe(400);
    const verified = await h.call('POST', '/api/v1/users', { body: { username: 'ok', email: 'ok@example.com', profile: { phone_number_verified: true } } });
    expect(verified.statusCode).toBe(400);
    expect(verified.json().errors).toEqual([{ path: '/profile', message: expect.stringContaining('phone_number') }]);
  });

  it('lists people a page at a time, filtered by role, disabled, source and part of the username or email', async () => {
    await t.store.createRole({ name: 'editor', description: undefined, permissions: [], createdAt: 1_800_000_000 });
    await addUser(t.store, 'alice', undefined, { roles: ['editor'] });
    await addUser(t.store, 'Bob', undefined, { disabled: true });
    await addUser(t.store, 'carol', undefined, { source: 'sso', email: 'carol@corp.example' });
    const names = async (query: string) => (await h.call('GET', `/api/v1/users${query}`)).json<{ data: { username: string }[] }>().data.map((u) => u.username);
    // admin: the bootstrap administrator.
    expect(await names('')).toEqual(['admin', 'alice', 'Bob', 'carol']);
    expect(await names('?role=editor')).toEqual(['alice']);
    expect(await names('?disabled=true')).toEqual(['Bob']);
    expect(await names('?disabled=false')).toEqual(['admin', 'alice', 'carol']);
    expect(await names('?source=sso')).toEqual(['carol']);
    expect(await names('?q=CORP')).toEqual(['carol']);
    expect(await names('?q=bo')).toEqual(['Bob']);
    const first = await h.call('GET', '/api/v1/users?limit=2');
    expect(first.json().data.map((u: { username: string }) => u.username)).toEqual(['admin', 'alice']);
    const second = await h.call('GET', `/api/v1/users?limit=2&cursor=${first.json().next}`);
    expect(second.json()).toMatchObject({ data: [{ username: 'Bob' }, { username: 'carol' }], next: null });
    expect((await h.call('GET', '/api/v1/users?disabled=maybe')).statusCode).toBe(400);
  });

  it('PATCH changes email, name and profile as users update does; the profile replaces the stored one; a stale If-Match is 412', async () => {
    await addUser(t.store, 'alice', undefined, { profile: { nickname: 'Al', phone_number: '+1 555 0100', phone_number_verified: true } });
    const before = await h.call('GET', '/api/v1/users/alice');
    const changed = await h.call('PATCH', '/api/v1/users/alice', {
      body: { email: 'alice@new.example', name: null, profile: { nickname: 'Ally', phone_number: '+1 555 0100', phone_number_verified: true } },
      headers: { 'if-match': before.headers.etag as string },
    });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json()).toMatchObject({ email: 'alice@new.example', name: null, profile: { nickname: 'Ally', phone_number_verified: true } });
    const [event] = await events('user.updated');
    expect(event?.details).toMatchObject({ username: 'alice', claims: ['email', 'name', 'nickname'] });
    const stale = await h.call('PATCH', '/api/v1/users/alice', { body: { name: 'Old' }, headers: { 'if-match': before.headers.etag as string } });
    expect(stale.statusCode).toBe(412);
    expect((await t.store.findUserByUsername('alice'))?.name).toBeUndefined();
    const empty = await h.call('PATCH', '/api/v1/users/alice', { body: { name: '  ', email: 'nope' } });
    expect(empty.statusCode).toBe(400);
    expect(
      empty
        .json()
        .errors.map((e: { path: string }) => e.path)
        .sort(),
    ).toEqual(['/email', '/name']);
    expect((await h.call('PATCH', '/api/v1/users/nobody', { body: { name: 'X' } })).statusCode).toBe(404);
  });

  it('disabling, a new password and revoke-tokens each end every sign-in of the person, as the commands do; enabling brings none back', async () => {
    const alice = await addUser(t.store, 'alice');
    const bob = await addUser(t.store, 'bob');
    await signedIn(alice.id, 's1');
    await signedIn(bob.id, 'b1');
    const disabled = await h.call('PATCH', '/api/v1/users/alice', { body: { disabled: true } });
    expect(disabled.json()).toMatchObject({ disabled: true });
    expect(await t.store.findSession('s1', Math.floor(t.clock()))).toBeUndefined();
    expect(await t.store.findSession('b1', Math.floor(t.clock()))).toBeDefined();
    expect((await h.call('PATCH', '/api/v1/users/alice', { body: { disabled: false } })).json()).toMatchObject({ disabled: false });
    expect((await events('user.disabled')).length).toBe(1);
    expect((await events('user.enabled')).length).toBe(1);

    await signedIn(alice.id, 's2');
    const passwd = await h.call('PATCH', '/api/v1/users/alice', { body: { password: 'a brand new password' } });
    expect(passwd.statusCode).toBe(200);
    expect(passwd.body).not.toContain('a brand new password');
    expect(await verifyPassword('a brand new password', (await t.store.findUserByUsername('alice'))?.passwordHash ?? '')).toBe(true);
    expect(await t.store.findSession('s2', Math.floor(t.clock()))).toBeUndefined();
    expect((await events('user.password_changed')).length).toBe(1);
    expect((await h.call('PATCH', '/api/v1/users/alice', { body: { password: 'short' } })).json().errors).toEqual([
      { path: '/password', message: expect.stringContaining('at least') },
    ]);

    await signedIn(alice.id, 's3');
    const revoked = await h.call('POST', '/api/v1/users/alice/revoke-tokens');
    expect(revoked.statusCode).toBe(204);
    expect(await t.store.findSession('s3', Math.floor(t.clock()))).toBeUndefined();
    expect((await t.store.findUserByUsername('alice'))?.tokensRevokedAt).toBeGreaterThan(0);
    expect((await h.call('POST', '/api/v1/users/nobody/revoke-tokens')).statusCode).toBe(404);
  });

  it('grants and revokes a role by hand; an unknown role or one not held is 404', async () => {
    await t.store.createRole({ name: 'editor', description: undefined, permissions: [], createdAt: 1_800_000_000 });
    await addUser(t.store, 'alice');
    const granted = await h.call('PUT', '/api/v1/users/alice/roles/editor');
    expect(granted.statusCode).toBe(200);
    expect(granted.json()).toMatchObject({ roles: ['editor'], direct_roles: ['editor'] });
    expect((await h.call('PUT', '/api/v1/users/alice/roles/editor')).statusCode).toBe(200);
    expect((await h.call('PUT', '/api/v1/users/alice/roles/nothing')).statusCode).toBe(404);
    const revoked = await h.call('DELETE', '/api/v1/users/alice/roles/editor');
    expect(revoked.json()).toMatchObject({ roles: [] });
    const again = await h.call('DELETE', '/api/v1/users/alice/roles/editor');
    expect(again.statusCode).toBe(404);
    expect(again.json().detail).toBe('alice does not hold "editor".');
    expect((await events('user.role_granted')).length).toBe(2);
  });

  it('mfa-enrollment answers a one-time link once and never logs it; refused for a disabled account; mfa-reset says whether there were factors', async () => {
    await addUser(t.store, 'alice');
    const made = await h.call('POST', '/api/v1/users/alice/mfa-enrollment', { body: { expires_in: 3600 } });
    expect(made.statusCode, made.body).toBe(201);
    expect(made.json()).toMatchObject({ link: expect.stringContaining('http://latchkey.test/account/security/enrol?code=lk_fe_'), replaced: 0 });
    const again = await h.call('POST', '/api/v1/users/alice/mfa-enrollment');
    expect(again.json().replaced).toBe(1);
    const logged = JSON.stringify(await t.app.services.auditTrail.flush().then(() => t.store.listAuditEvents({ limit: 100 })));
    expect(logged).not.toContain(made.json().link.split('code=')[1]);
    expect((await h.call('GET', '/api/v1/users/alice')).body).not.toContain('lk_fe_');
    const cancelled = await h.call('DELETE', '/api/v1/users/alice/mfa-enrollment');
    expect(cancelled.json()).toEqual({ cancelled: 1 });
    expect((await h.call('POST', '/api/v1/users/alice/mfa-enrollment', { body: { expires_in: 10 } })).statusCode).toBe(400);
    await h.call('PATCH', '/api/v1/users/alice', { body: { disabled: true } });
    const refused = await h.call('POST', '/api/v1/users/alice/mfa-enrollment');
    expect(refused.statusCode).toBe(409);
    const reset = await h.call('POST', '/api/v1/users/alice/mfa-reset');
    expect(reset.json()).toEqual({ had_factors: false });
    expect((await events('user.second_factors_reset')).length).toBe(1);
  });

  it('unlinks the identities at a connector, ending the sign-ins; an unknown connector or none linked is 404', async () => {
    const alice = await addUser(t.store, 'alice');
    await t.store.createConnector({
      id: 'sso',
      type: 'oidc',
      name: 'SSO',
      config: { issuer: 'https://sso.example.com', clientId: 'latchkey' },
      secret: undefined,
      createdAt: 1_800_000_000,
      managedBy: undefined,
    });
    await t.store.linkIdentity({ connectorId: 'sso', subject: 'up-1', userId: alice.id, createdAt: 1_800_000_000, lastSignInAt: undefined });
    await signedIn(alice.id, 's1');
    const unlinked = await h.call('DELETE', '/api/v1/users/alice/identities/sso');
    expect(unlinked.statusCode, unlinked.body).toBe(200);
    expect(unlinked.json()).toEqual({ identities: [{ connector: 'sso', subject: 'up-1' }], can_sign_in: true });
    expect(await t.store.findSession('s1', Math.floor(t.clock()))).toBeUndefined();
    expect((await h.call('DELETE', '/api/v1/users/alice/identities/sso')).json().detail).toBe('alice has no identity linked at "sso".');
    expect((await h.call('DELETE', '/api/v1/users/alice/identities/nowhere')).json().detail).toBe('no connector "nowhere".');
  });

  it('DELETE removes a person and ends their sign-ins; 404 after; a stale If-Match is 412', async () => {
    const alice = await addUser(t.store, 'alice');
    await signedIn(alice.id, 's1');
    const etag = (await h.call('GET', '/api/v1/users/alice')).headers.etag as string;
    await h.call('PATCH', '/api/v1/users/alice', { body: { name: 'Changed' } });
    expect((await h.call('DELETE', '/api/v1/users/alice', { headers: { 'if-match': etag } })).statusCode).toBe(412);
    expect((await h.call('DELETE', '/api/v1/users/alice')).statusCode).toBe(204);
    expect(await t.store.findUserByUsername('alice')).toBeUndefined();
    expect(await t.store.findSession('s1', Math.floor(t.clock()))).toBeUndefined();
    expect((await h.call('GET', '/api/v1/users/alice')).statusCode).toBe(404);
    expect((await h.call('DELETE', '/api/v1/users/alice')).statusCode).toBe(404);
    const [event] = await events('user.removed');
    expect(event?.details).toMatchObject({ username: 'alice', via: 'api' });
  });

  it('a person removed through the API can no longer call it with their token; nobody removes themselves (409)', async () => {
    await addClient(t.store, 'cli', { grantTypes: ['device_code', 'refresh_token'] });
    const scope = `openid offline_access ${allManagementScopes.join(' ')}`;
    const tokenOf = async (username: string) => {
      const person = await addUser(t.store, username, undefined, { roles: ['admin'] });
      const stored = await t.store.findUserById(person.id);
      return (await tokensFor(t, stored!, 'cli', { scope, audience: `${t.config.issuer}/api/v1` })).access_token;
    };
    const [alice, bob] = [await tokenOf('alice'), await tokenOf('bob')];
    const self = await h.call('DELETE', '/api/v1/users/alice', { as: alice });
    expect(self.statusCode).toBe(409);
    expect(self.json().type).toMatch(/#self$/);
    expect((await h.call('DELETE', '/api/v1/users/alice', { as: bob })).statusCode).toBe(204);
    expect((await h.call('GET', '/api/v1/users', { as: alice })).statusCode).toBe(401);
    expect((await h.call('GET', '/api/v1/users', { as: bob })).statusCode).toBe(200);
  });

  it('a caller without write:users may read but not change (403), and one without read:users may not list', async () => {
    await addUser(t.store, 'alice');
    const reader = await h.tokenFor('reader', ['read:users']);
    expect((await h.call('GET', '/api/v1/users/alice', { as: reader })).statusCode).toBe(200);
    for (const [method, url] of [
      ['PATCH', '/api/v1/users/alice'],
      ['DELETE', '/api/v1/users/alice'],
      ['POST', '/api/v1/users/alice/revoke-tokens'],
    ] as const) {
      const res = await h.call(method, url, { as: reader, ...(method === 'PATCH' ? { body: { name: 'X' } } : {}) });
      expect(res.statusCode, `${method} ${url}`).toBe(403);
    }
    const none = await h.tokenFor('none', ['read:clients']);
    expect((await h.call('GET', '/api/v1/users', { as: none })).statusCode).toBe(403);
    expect((await t.store.findUserByUsername('alice'))?.name).toBe('Alice Example');
  });
});
