/**
 * The admin console (/admin) through its pages, with app.inject and a manual clock: who
 * may use it (not signed in → sign-in page; no admin role → 403, audited; one factor where second
 * factors are in use → the step-up page), the form token of every change, and each section —
 * users, clients and their machine grants, APIs, roles, connectors, signing keys, the audit log —
 * changing the store and leaving an audit event whose actor is the acting admin; bad input
 * answered with the page and a 4xx, never a 500.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { decodeProtectedHeader } from 'jose';
import { addApi, addClient, addUser, testApp, type TestApp } from '../helpers/app.js';
import { Browser, decodeEntities, inputValue, injectTransport, signIn, type BrowserResponse } from '../helpers/browser.js';
import { tokensFor, refresh } from '../helpers/flows.js';
import { acceptEnrolmentLink, enrollTotp } from '../helpers/mfa.js';
import { cookieNames } from '../../src/http/cookies.js';
import { randomId, randomSecret, sha256 } from '../../src/crypto/secrets.js';
import type { AuditEventRecord, AuthMethod } from '../../src/store/store.js';

let t: TestApp;
const logLines: string[] = [];
afterEach(() => t?.close());

const api = 'https://api.example.com';

async function setUp(env: Record<string, string> = { LATCHKEY_MFA: 'off' }) {
  logLines.length = 0;
  t = await testApp(env, { logLines });
  await addUser(t.store, 'root', 'root-password', { roles: ['admin'] });
  await addUser(t.store, 'alice', 'alice-password');
  await addUser(t.store, 'bob', 'bob-password');
  await addClient(t.store, 'tv', { name: 'Living Room TV' });
  await addApi(t.store, api, 'Reports', [], ['read:reports', 'write:reports']);
  return new Browser(injectTransport(t.app), 'Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0');
}

async function signInAs(browser: Browser, who = 'root', returnTo = '/admin') {
  const res = await signIn(browser, await browser.get(`/login?fresh=1&return_to=${encodeURIComponent(returnTo)}`), who, `${who}-password`);
  expect(res.status, res.body).toBe(303);
  return res;
}

/** A signed-in administrator's browser (LATCHKEY_MFA=off unless the test says otherwise). */
async function admin(env?: Record<string, string>) {
  const browser = await setUp(env);
  await signInAs(browser);
  return browser;
}

const user = async (name: string) => (await t.store.findUserByUsername(name))!;
const now = () => Math.floor(t.clock());

/** The page's form token (every form of a console page carries the same one). */
async function csrfOf(browser: Browser, path = '/admin/users') {
  const page = await browser.get(path);
  expect(page.status, page.body.slice(0, 300)).toBe(200);
  const token = inputValue(page.body, 'csrf_token');
  expect(token, `a form on ${path}`).toBeDefined();
  return token!;
}

/** Posts a console form with its token, as the page at `from` would. */
async function submit(browser: Browser, from: string, action: string, fields: Record<string, string>) {
  return browser.post(action, { csrf_token: await csrfOf(browser, from), ...fields });
}

/** The stored audit events of one name (after what is still batched is written). */
async function stored(event: string): Promise<AuditEventRecord[]> {
  await t.app.services.auditTrail.flush();
  return t.store.listAuditEvents({ event, limit: 100 });
}

async function expectAudited(event: string, fields: Partial<AuditEventRecord> & { details?: Record<string, unknown> }) {
  const events = await stored(event);
  expect(events.length, `${event} stored`).toBeGreaterThan(0);
  const { details, ...rest } = fields;
  expect(events[0]).toMatchObject({ actor: 'root', ...rest, ...(details ? { details: expect.objectContaining(details) } : {}) });
}

/** The text of a page, tags removed, for reading messages. */
const text = (res: BrowserResponse) => decodeEntities(res.body.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' '));

/** Every page of the console, and every form it has (with valid-looking fields). */
const pages = [
  '/admin',
  '/admin/users',
  '/admin/users/ID',
  '/admin/sessions',
  '/admin/clients',
  '/admin/clients/tv',
  '/admin/apis',
  `/admin/apis/edit?identifier=${encodeURIComponent(api)}`,
  '/admin/roles',
  '/admin/roles/admin',
  '/admin/connectors',
  '/admin/keys',
  '/admin/audit',
];
const forms: [string, Record<string, string>][] = [
  ['/admin/users', { username: 'mallory', email: 'm@example.com', name: 'M', password: 'mallory-password' }],
  ['/admin/users/ID/disable', {}],
  ['/admin/users/ID/enable', {}],
  ['/admin/users/ID/password', { new_password: 'taken-over-password' }],
  ['/admin/users/ID/roles/grant', { role: 'admin' }],
  ['/admin/users/ID/roles/revoke', { role: 'admin' }],
  ['/admin/users/ID/sign-ins/end', { sign_in: 'SESSION' }],
  ['/admin/users/ID/sign-ins/end-all', {}],
  ['/admin/users/ID/second-factors/reset', {}],
  ['/admin/users/ID/second-factors/enrolment-link', {}],
  ['/admin/users/ID/identities/unlink', { connector: 'corp' }],
  ['/admin/users/ID/identities/allow', { connector: 'corp' }],
  ['/admin/sessions/end', { sign_in: 'SESSION' }],
  ['/admin/clients', { client_id: 'evil', name: 'Evil', redirect_uris: 'https://evil.example/cb', type: 'confidential', grant_type_0: 'authorization_code' }],
  ['/admin/clients/tv/update', { name: 'Evil TV', redirect_uris: '', post_logout_redirect_uris: '' }],
  ['/admin/clients/tv/rotate-secret', { keep_old_for: '0' }],
  ['/admin/clients/tv/disable', {}],
  ['/admin/clients/tv/enable', {}],
  ['/admin/clients/tv/remove', {}],
  ['/admin/clients/tv/grants', { api, scope_0: 'read:reports' }],
  ['/admin/clients/tv/grants/remove', { api }],
  ['/admin/apis', { identifier: 'https://evil.example', name: 'Evil', scopes: 'x' }],
  ['/admin/apis/update', { identifier: api, name: 'Evil', scopes: '' }],
  ['/admin/apis/remove', { identifier: api }],
  ['/admin/roles', { name: 'evil', description: '', permission_0: `${api}:read:reports` }],
  ['/admin/roles/admin/update', { description: 'evil' }],
  ['/admin/roles/admin/remove', {}],
  ['/admin/roles/admin/members/add', { username: 'alice' }],
  ['/admin/roles/admin/members/remove', { user_id: 'ID' }],
  ['/admin/connectors/corp/remove', {}],
  ['/admin/keys/rotate', {}],
];

/** What every refused change must leave alone. */
async function snapshot() {
  const [users, clients, apis, roles, connectors, keys, sessions] = await Promise.all([
    t.store.listUsers(),
    t.store.listClients(),
    t.store.listApis(),
    t.store.listRoles(),
    t.store.listConnectors(),
    t.store.listSigningKeys(),
    t.store.listSessions(undefined, now()),
  ]);
  const oneTimeLinks = t.store.db.prepare('SELECT token_hash, used_at FROM email_tokens ORDER BY token_hash').all();
  return JSON.stringify({
    users,
    clients,
    apis,
    roles,
    connectors,
    keys,
    sessions: sessions.map((s) => s.id),
    grants: await t.store.listClientGrants(undefined),
    oneTimeLinks,
  });
}

/** A browser session for `who` made straight in the store, signed in as `amr` says. */
async function sessionFor(browser: Browser, who: string, amr: AuthMethod[]) {
  const id = randomSecret();
  const { id: userId } = await user(who);
  await t.store.createSession({
    idHash: sha256(id),
    userId,
    authTime: now(),
    amr,
    createdAt: now(),
    expiresAt: now() + 3600,
    interactionId: undefined,
    id: randomId(),
    ip: '127.0.0.1',
    userAgent: 'test',
    lastSeenAt: now(),
  });
  browser.cookies.set(cookieNames(t.config).session, id);
}

async function addConnector(id = 'corp') {
  await t.store.createConnector({
    id,
    type: 'oidc',
    name: 'Corp SSO',
    config: { issuer: 'https://sso.corp.example', clientId: 'latchkey', scope: 'openid email profile' },
    secret: undefined,
    createdAt: 1_800_000_000,
  });
}

describe('who may use the console', () => {
  it('not signed in: every page and every form sends the browser to sign in first, and back', async () => {
    const browser = await setUp();
    const alice = await user('alice');
    for (const path of pages) {
      const res = await browser.get(path.replace('ID', alice.id));
      expect(res.status, path).toBe(303);
      expect(res.location, path).toBe(`/login?return_to=${encodeURIComponent(path.replace('ID', alice.id))}`);
      expect(res.headers['cache-control']).toBe('no-store');
    }
    const before = await snapshot();
    for (const [action, fields] of forms) {
      const res = await browser.post(action.replace('ID', alice.id), { csrf_token: 'x', ...fields });
      expect(res.status, action).toBe(303);
      expect(res.location, action).toMatch(/^\/login\?return_to=%2Fadmin/);
    }
    expect(await snapshot()).toBe(before);
  });

  it('signed in without the admin role: 403 on every page and every form, audited; nothing changes', async () => {
    const browser = await setUp();
    await addConnector();
    await signInAs(browser, 'alice', '/account');
    const alice = await user('alice');
    for (const path of pages) {
      const res = await browser.get(path.replace('ID', alice.id));
      expect(res.status, path).toBe(403);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(text(res)).toContain('Administrators only');
    }
    // A form token of another form of hers does not help either.
    const token = inputValue((await browser.get('/account')).body, 'csrf_token')!;
    const before = await snapshot();
    for (const [action, fields] of forms) {
      const res = await browser.post(action.replace('ID', alice.id).replace('SESSION', 'x'), { csrf_token: token, ...fields });
      expect(res.status, action).toBe(403);
    }
    expect(await snapshot()).toBe(before);
    const denied = await stored('admin.access_denied');
    expect(denied).toHaveLength(pages.length + forms.length);
    expect(denied[0]).toMatchObject({ userId: alice.id, actor: undefined });
    expect(logLines.some((l) => l.includes('"admin.access_denied"') && l.includes('"level":40'))).toBe(true);
  });

  it('a disabled administrator is signed out and cannot come back', async () => {
    const browser = await admin();
    expect((await browser.get('/admin')).status).toBe(200);
    await t.store.setUserDisabled('root', true, now());
    expect((await browser.get('/admin')).status).toBe(303);
    const again = await signIn(browser, await browser.get('/login?fresh=1'), 'root', 'root-password');
    expect(again.status).not.toBe(303);
  });

  it('LATCHKEY_MFA=optional: an administrator signed in with a password alone is sent to the step-up page, which has them set up a factor first, with an enrolment link', async () => {
    const browser = await admin({ LATCHKEY_MFA: 'optional' });
    const first = await browser.get('/admin/users?q=al');
    expect(first.status).toBe(303);
    expect(first.location).toBe(`/login/second-factor?return_to=${encodeURIComponent('/admin/users?q=al')}`);
    // Without a factor, the step-up page sends them to set one up, and back: an administrator's first one needs an enrolment link.
    const stepUp = await browser.get(first.location!);
    expect(stepUp.location).toBe(`/account/security?return_to=${encodeURIComponent('/admin/users?q=al')}`);
    expect(text(await browser.get(stepUp.location!))).toContain('Ask an administrator to run latchkey users mfa-enroll root');
    await acceptEnrolmentLink(t, browser, 'root', '/admin/users?q=al');
    const before = await snapshot();
    // A change is refused the same way (before anything else is looked at).
    const post = await browser.post('/admin/users', { csrf_token: 'x', username: 'mallory', email: 'm@example.com', password: 'mallory-password' });
    expect(post.status).toBe(303);
    expect(post.location).toBe(stepUpPath('/admin/users'));
    expect(await snapshot()).toBe(before);
    // With an authenticator app set up (which raises this session to two factors), the console opens.
    const { page } = await enrollTotp(t, browser, '/admin/users?q=al');
    expect(page.status).toBe(200);
    const users = await browser.get('/admin/users?q=al');
    expect(users.status).toBe(200);
    expect(text(users)).toContain('alice@example.com');
  });

  it('LATCHKEY_MFA=required: a one-factor session (from before it was required) is sent to the step-up page', async () => {
    const browser = await setUp({ LATCHKEY_MFA: 'required' });
    await sessionFor(browser, 'root', ['pwd']);
    const res = await browser.get('/admin/keys');
    expect(res.status).toBe(303);
    expect(res.location).toBe(stepUpPath('/admin/keys'));
    // A session of two factors is let in.
    await sessionFor(browser, 'root', ['pwd', 'otp']);
    expect((await browser.get('/admin/keys')).status).toBe(200);
  });

  it('every change needs the console’s form token: missing or forged → 403, nothing changed', async () => {
    const browser = await admin();
    await addConnector();
    const bob = await user('bob');
    const [session] = await t.store.listSessions((await user('root')).id, now());
    // The token of another form (the account page) is not the console's.
    const accountToken = inputValue((await browser.get('/account')).body, 'csrf_token')!;
    const adminToken = await csrfOf(browser);
    const before = await snapshot();
    for (const [action, fields] of forms) {
      const path = action.replace('ID', bob.id);
      for (const csrf_token of [
        undefined,
        '',
        'forged',
        `${now()}.${'A'.repeat(43)}`,
        accountToken,
        adminToken.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')),
      ]) {
        const res = await browser.post(path, {
          ...(csrf_token === undefined ? {} : { csrf_token }),
          ...fields,
          ...(fields.sign_in ? { sign_in: session!.id } : {}),
        });
        expect(res.status, `${path} ${csrf_token}`).toBe(403);
        expect(text(res)).toContain('This form has expired');
      }
    }
    expect(await snapshot()).toBe(before);
    // The real token does it.
    expect((await browser.post('/admin/keys/rotate', { csrf_token: adminToken })).status).toBe(303);
  });
});

function stepUpPath(path: string) {
  return `/login/second-factor?return_to=${encodeURIComponent(path)}`;
}

describe('users', () => {
  it('lists and searches users; pages are not cached', async () => {
    const browser = await admin();
    await t.store.setUserDisabled('bob', true, now());
    const list = await browser.get('/admin/users');
    expect(list.status).toBe(200);
    expect(list.headers['cache-control']).toBe('no-store');
    const page = text(list);
    for (const name of ['root', 'alice', 'bob', 'alice@example.com', 'Disabled', 'admin']) expect(page).toContain(name);
    const search = text(await browser.get('/admin/users?q=ALICE'));
    expect(search).toContain('alice@example.com');
    expect(search).not.toContain('bob@example.com');
    expect(search).toContain('1 of 4 users match'); // the bootstrap administrator is one
    expect((await browser.get(`/admin/users?q=${'x'.repeat(300)}`)).status).toBe(400);
  });

  it('creates a user who can then sign in; audited with the admin as actor', async () => {
    const browser = await admin();
    const res = await submit(browser, '/admin/users', '/admin/users', {
      username: 'carol',
      email: 'carol@example.com',
      name: 'Carol C.',
      password: 'carol-password',
    });
    expect(res.status).toBe(303);
    const carol = await user('carol');
    expect(carol).toMatchObject({ email: 'carol@example.com', name: 'Carol C.', source: 'local', disabled: false, roles: [] });
    expect(res.location).toBe(`/admin/users/${carol.id}?done=created`);
    expect(text(await browser.get(res.location!))).toContain('The user was created.');
    await expectAudited('user.created', { userId: carol.id, details: { username: 'carol' } });
    expect(JSON.stringify(logLines)).not.toContain('carol-password');
    const fresh = new Browser(injectTransport(t.app));
    expect((await signIn(fresh, await fresh.get('/login'), 'carol', 'carol-password')).status).toBe(303);
  });

  it('refuses bad input with the page and a clear message (4xx, not 500), keeping what was typed', async () => {
    const browser = await admin();
    const cases: [Record<string, string>, number, string][] = [
      [{ username: 'x'.repeat(65), email: 'x@example.com', password: 'long-enough' }, 400, 'is not a valid username'],
      [{ username: 'has space', email: 'x@example.com', password: 'long-enough' }, 400, 'is not a valid username'],
      [{ username: 'dave', email: 'not an email', password: 'long-enough' }, 400, 'is not a valid email address'],
      [{ username: 'dave', email: 'dave@example.com', password: 'short' }, 400, 'The password must be at least 8 characters'],
      [{ username: 'dave', email: 'dave@example.com', name: 'x'.repeat(300), password: 'long-enough' }, 400, 'at most 256 characters'],
      [{ username: 'dave', email: 'dave@example.com', name: 'Dave\u0000', password: 'long-enough' }, 400, 'control characters'],
      [{ username: 'ALICE', email: 'a2@example.com', password: 'long-enough' }, 409, 'The username ALICE is taken'],
    ];
    for (const [fields, status, message] of cases) {
      const res = await submit(browser, '/admin/users', '/admin/users', fields);
      expect(res.status, JSON.stringify(fields)).toBe(status);
      expect(text(res)).toContain(message);
      expect(res.body).toContain('role="alert"');
      if (fields.email) expect(inputValue(res.body, 'email')).toBe(fields.email);
    }
    // Far too long for any field: refused before it is looked at.
    expect((await submit(browser, '/admin/users', '/admin/users', { username: 'x'.repeat(5000), email: 'x', password: 'x' })).status).toBe(400);
    expect((await t.store.listUsers()).map((u) => u.username).sort()).toEqual(['admin', 'alice', 'bob', 'root']);
    expect(await stored('user.created')).toEqual([]);
  });

  it('a user page: unknown id → 404, an over-long id → 400', async () => {
    const browser = await admin();
    const alice = await user('alice');
    const page = await browser.get(`/admin/users/${alice.id}`);
    expect(page.status).toBe(200);
    expect(text(page)).toContain('alice@example.com');
    expect((await browser.get('/admin/users/no-such-id')).status).toBe(404);
    expect((await browser.get(`/admin/users/${'x'.repeat(200)}`)).status).toBe(400);
    const token = await csrfOf(browser);
    expect((await browser.post('/admin/users/no-such-id/disable', { csrf_token: token })).status).toBe(404);
    // Control characters are in no stored key (and PostgreSQL text cannot hold U+0000): refused, never looked up.
    for (const path of [
      '/admin/users/%00',
      '/admin/clients/tv%00',
      '/admin/roles/admin%0A',
      '/admin/audit?user=%00',
      '/admin/audit?client=a%07b',
      '/admin/apis/edit?identifier=%00',
    ]) {
      const res = await browser.get(path);
      expect(res.status, path).toBe(400);
      expect(res.headers['content-type']).toContain('text/html');
    }
    for (const [action, fields] of [
      [`/admin/users/${alice.id}/roles/grant`, { role: 'admin\u0000' }],
      [`/admin/users/${alice.id}/sign-ins/end`, { sign_in: '\u0000' }],
      ['/admin/roles/admin/members/add', { username: 'alice\u0000' }],
      ['/admin/clients/tv/grants/remove', { api: '\u0000' }],
      ['/admin/connectors/%00/remove', {}],
    ] as const) {
      expect((await browser.post(action, { csrf_token: token, ...fields })).status, action).toBe(400);
    }
    expect((await user('alice')).roles).toEqual([]);
  });

  it('disable ends everything the user holds (and tells back-channel clients); enable lets them sign in again', async () => {
    const browser = await admin();
    const aliceBrowser = new Browser(injectTransport(t.app));
    await signInAs(aliceBrowser, 'alice', '/account');
    const alice = await user('alice');
    const tv = await tokensFor(t, alice, 'tv');
    const res = await submit(browser, `/admin/users/${alice.id}`, `/admin/users/${alice.id}/disable`, {});
    expect(res.status).toBe(303);
    expect(res.location).toBe(`/admin/users/${alice.id}?done=disabled`);
    expect((await user('alice')).disabled).toBe(true);
    expect((await aliceBrowser.get('/account')).status).toBe(303);
    expect((await refresh(t, 'tv', tv.refresh_token!)).json().error).toBe('invalid_grant');
    await expectAudited('user.disabled', { userId: alice.id });
    const enabled = await submit(browser, `/admin/users/${alice.id}`, `/admin/users/${alice.id}/enable`, {});
    expect(enabled.location).toBe(`/admin/users/${alice.id}?done=enabled`);
    expect((await user('alice')).disabled).toBe(false);
    await expectAudited('user.enabled', { userId: alice.id });
    await signInAs(aliceBrowser, 'alice', '/account');
  });

  it('an administrator cannot disable their own account or take their own admin role here', async () => {
    const browser = await admin();
    const root = await user('root');
    const disable = await submit(browser, `/admin/users/${root.id}`, `/admin/users/${root.id}/disable`, {});
    expect(disable.status).toBe(400);
    expect(text(disable)).toContain('You cannot disable your own account');
    const revoke = await submit(browser, `/admin/users/${root.id}`, `/admin/users/${root.id}/roles/revoke`, { role: 'admin' });
    expect(revoke.status).toBe(400);
    const viaRole = await submit(browser, '/admin/roles/admin', '/admin/roles/admin/members/remove', { user_id: root.id });
    expect(viaRole.status).toBe(400);
    expect(await user('root')).toMatchObject({ disabled: false, roles: ['admin'] });
  });

  it('a new password: the old one stops working and every sign-in of theirs ends', async () => {
    const browser = await admin();
    const aliceBrowser = new Browser(injectTransport(t.app));
    await signInAs(aliceBrowser, 'alice', '/account');
    const alice = await user('alice');
    const short = await submit(browser, `/admin/users/${alice.id}`, `/admin/users/${alice.id}/password`, { new_password: 'short' });
    expect(short.status).toBe(400);
    expect(text(short)).toContain('at least 8 characters');
    const res = await submit(browser, `/admin/users/${alice.id}`, `/admin/users/${alice.id}/password`, { new_password: 'a-brand-new-password' });
    expect(res.location).toBe(`/admin/users/${alice.id}?done=password`);
    expect((await aliceBrowser.get('/account')).status).toBe(303);
    const fresh = new Browser(injectTransport(t.app));
    expect((await signIn(fresh, await fresh.get('/login'), 'alice', 'alice-password')).status).toBe(401);
    expect((await signIn(fresh, await fresh.get('/login'), 'alice', 'a-brand-new-password')).status).toBe(303);
    await expectAudited('user.password_changed', { userId: alice.id, details: { source: 'admin' } });
    expect(JSON.stringify(logLines)).not.toContain('a-brand-new-password');
    // Their own password, administrators change on their account page.
    const root = await user('root');
    expect((await submit(browser, `/admin/users/${root.id}`, `/admin/users/${root.id}/password`, { new_password: 'another-password' })).status).toBe(400);
  });

  it('grants and revokes roles', async () => {
    const browser = await admin();
    await t.store.createRole({ name: 'reporter', description: 'Reads reports', permissions: [{ api, scope: 'read:reports' }], createdAt: now() });
    const alice = await user('alice');
    const page = await browser.get(`/admin/users/${alice.id}`);
    expect(page.body).toContain('<option value="reporter">');
    const granted = await submit(browser, `/admin/users/${alice.id}`, `/admin/users/${alice.id}/roles/grant`, { role: 'reporter' });
    expect(granted.location).toBe(`/admin/users/${alice.id}?done=role_granted`);
    expect((await user('alice')).roles).toEqual(['reporter']);
    await expectAudited('user.role_granted', { userId: alice.id, details: { role: 'reporter' } });
    const unknown = await submit(browser, `/admin/users/${alice.id}`, `/admin/users/${alice.id}/roles/grant`, { role: 'no-such-role' });
    expect(unknown.status).toBe(400);
    expect(text(unknown)).toContain('Choose one of the roles');
    const revoked = await submit(browser, `/admin/users/${alice.id}`, `/admin/users/${alice.id}/roles/revoke`, { role: 'reporter' });
    expect(revoked.location).toBe(`/admin/users/${alice.id}?done=role_revoked`);
    expect((await user('alice')).roles).toEqual([]);
    await expectAudited('user.role_revoked', { userId: alice.id, details: { role: 'reporter' } });
    // Granting admin makes a new administrator.
    await submit(browser, `/admin/users/${alice.id}`, `/admin/users/${alice.id}/roles/grant`, { role: 'admin' });
    const aliceBrowser = new Browser(injectTransport(t.app));
    await signInAs(aliceBrowser, 'alice');
    expect((await aliceBrowser.get('/admin')).status).toBe(200);
  });

  it('shows their sign-ins and ends one, or all; only theirs', async () => {
    const browser = await admin();
    const aliceBrowser = new Browser(injectTransport(t.app), 'AliceBrowser/1.0');
    await signInAs(aliceBrowser, 'alice', '/account');
    const alice = await user('alice');
    const bob = await user('bob');
    const tv = await tokensFor(t, alice, 'tv');
    const bobTv = await tokensFor(t, bob, 'tv');
    const [session] = await t.store.listSessions(alice.id, now());
    const [family] = await t.store.listRefreshFamilies(alice.id, now());
    const [bobFamily] = await t.store.listRefreshFamilies(bob.id, now());
    const page = await browser.get(`/admin/users/${alice.id}`);
    expect(page.body).toContain(`name="sign_in" value="${session!.id}"`);
    expect(page.body).toContain(`name="sign_in" value="${family!.familyId}"`);
    expect(text(page)).toContain('AliceBrowser 1.0'); // named, never the raw User-Agent
    expect(text(page)).not.toContain('AliceBrowser/1.0');
    expect(text(page)).toContain('Living Room TV (tv)');
    // Bob's family by its id, through Alice's page: nothing.
    const other = await submit(browser, `/admin/users/${alice.id}`, `/admin/users/${alice.id}/sign-ins/end`, { sign_in: bobFamily!.familyId });
    expect(other.location).toBe(`/admin/users/${alice.id}?done=ended_none`);
    expect((await refresh(t, 'tv', bobTv.refresh_token!)).statusCode).toBe(200);
    const ended = await submit(browser, `/admin/users/${alice.id}`, `/admin/users/${alice.id}/sign-ins/end`, { sign_in: session!.id });
    expect(ended.location).toBe(`/admin/users/${alice.id}?done=ended`);
    expect((await aliceBrowser.get('/account')).status).toBe(303);
    await expectAudited('session.ended_by_admin', { userId: alice.id, details: { kind: 'browser' } });
    await submit(browser, `/admin/users/${alice.id}`, `/admin/users/${alice.id}/sign-ins/end`, { sign_in: family!.familyId });
    expect((await refresh(t, 'tv', tv.refresh_token!)).json().error).toBe('invalid_grant');
    await expectAudited('session.ended_by_admin', { userId: alice.id, clientId: 'tv', details: { kind: 'app' } });
    // Everything at once.
    await signInAs(aliceBrowser, 'alice', '/account');
    const all = await submit(browser, `/admin/users/${alice.id}`, `/admin/users/${alice.id}/sign-ins/end-all`, {});
    expect(all.location).toBe(`/admin/users/${alice.id}?done=ended_all`);
    expect((await aliceBrowser.get('/account')).status).toBe(303);
    await expectAudited('user.tokens_revoked', { userId: alice.id, details: { source: 'admin' } });
  });

  it('removes their second factors', async () => {
    const browser = await setUp({ LATCHKEY_MFA: 'optional' });
    const aliceBrowser = new Browser(injectTransport(t.app));
    await signInAs(aliceBrowser, 'alice', '/account');
    await enrollTotp(t, aliceBrowser);
    const alice = await user('alice');
    expect(await t.store.findTotp(alice.id)).toBeDefined();
    // root signs in with a factor of their own (the first, through an enrolment link).
    await signInAs(browser, 'root', '/account/security');
    await acceptEnrolmentLink(t, browser, 'root');
    await enrollTotp(t, browser);
    const page = await browser.get(`/admin/users/${alice.id}`);
    expect(page.status).toBe(200);
    expect(text(page)).toContain('An authenticator app');
    const res = await browser.post(`/admin/users/${alice.id}/second-factors/reset`, { csrf_token: inputValue(page.body, 'csrf_token')! });
    expect(res.location).toBe(`/admin/users/${alice.id}?done=factors_reset`);
    expect(await t.store.findTotp(alice.id)).toBeUndefined();
    await expectAudited('user.second_factors_reset', { userId: alice.id, details: { hadFactors: true } });
  });
});

describe('sessions', () => {
  it('lists everyone’s live sign-ins: person, what, device named as people know it, address, started, last seen', async () => {
    const browser = await admin();
    const aliceBrowser = new Browser(
      injectTransport(t.app),
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
    );
    await signInAs(aliceBrowser, 'alice', '/account');
    const bobBrowser = new Browser(injectTransport(t.app), `Mozilla/5.0 (${'Garbage; '.repeat(40)}) <b>bold</b>`);
    await signInAs(bobBrowser, 'bob', '/account');
    await tokensFor(t, await user('bob'), 'tv');
    const page = await browser.get('/admin/sessions');
    expect(page.status).toBe(200);
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.body).toContain('<a href="/admin/sessions" aria-current="page">Sessions</a>');
    const rows = page.body
      .split('<tr>')
      .slice(2)
      .map((row) => text({ ...page, body: row.split('</tr>')[0]! }).trim());
    const rowOf = (...parts: string[]) => rows.find((row) => parts.every((part) => row.includes(part))) ?? '';
    expect(rowOf('alice', 'Browser session')).toBe('alice Browser session Chrome on macOS 127.0.0.1 2027-01-15 08:00 UTC 2027-01-15 08:00 UTC End');
    expect(rowOf('bob', 'Browser session')).toContain('Unknown software');
    expect(rowOf('bob', 'Living Room TV')).toContain('(device or app)');
    expect(rowOf('root', 'This browser (your session)')).toContain('Firefox on Linux');
    expect(page.body).not.toContain('Garbage;');
    expect(page.body).not.toContain('<b>bold');
    expect(text(page)).toContain('4 live sign-ins');
    // The front page counts the browser sessions and leads here.
    expect(text(await browser.get('/admin'))).toMatch(/3 Sessions browser sessions signed in now/);
    // One person's only.
    const alices = await browser.get('/admin/sessions?user=alice');
    expect(text(alices)).toContain('1 live sign-in of alice');
    expect(alices.body).not.toContain('>bob</a>');
    const nobody = await browser.get('/admin/sessions?user=nobody');
    expect(nobody.status).toBe(200);
    expect(text(nobody)).toContain('There is no user by that name.');
  });

  it('ends a browser session or an app sign-in of anyone: the form token required, audited, the person signed out', async () => {
    const browser = await admin();
    const aliceBrowser = new Browser(injectTransport(t.app), 'latchkey/0.2.0 (Linux; x64)');
    await signInAs(aliceBrowser, 'alice', '/account');
    const alice = await user('alice');
    const tv = await tokensFor(t, await user('bob'), 'tv');
    const [session] = await t.store.listSessions(alice.id, now());
    const [family] = await t.store.listRefreshFamilies((await user('bob')).id, now());
    expect((await browser.post('/admin/sessions/end', { sign_in: session!.id })).status).toBe(403);
    expect((await browser.post('/admin/sessions/end', { csrf_token: 'forged', sign_in: session!.id })).status).toBe(403);
    expect((await aliceBrowser.get('/account')).status).toBe(200);

    const ended = await submit(browser, '/admin/sessions', '/admin/sessions/end', { sign_in: session!.id, user: 'alice', page: '1' });
    expect(ended.status).toBe(303);
    expect(ended.location).toBe('/admin/sessions?user=alice&done=ended');
    expect(text(await browser.get(ended.location!))).toContain('That sign-in was ended.');
    expect((await aliceBrowser.get('/account')).status).toBe(303);
    await expectAudited('session.ended_by_admin', { userId: alice.id, details: { kind: 'browser', sessionId: session!.id } });

    const app = await submit(browser, '/admin/sessions', '/admin/sessions/end', { sign_in: family!.familyId });
    expect(app.location).toBe('/admin/sessions?done=ended');
    expect((await refresh(t, 'tv', tv.refresh_token!)).json().error).toBe('invalid_grant');
    await expectAudited('session.ended_by_admin', { clientId: 'tv', details: { kind: 'app', familyId: family!.familyId } });

    const again = await submit(browser, '/admin/sessions', '/admin/sessions/end', { sign_in: session!.id });
    expect(again.location).toBe('/admin/sessions?done=ended_none');
    expect(text(await browser.get(again.location!))).toContain('That sign-in had ended already.');
  });

  it('pages through many sign-ins, 50 a page', async () => {
    const browser = await admin();
    const alice = await user('alice');
    for (let i = 0; i < 60; i++) {
      await t.store.createSession({
        idHash: sha256(`session-${i}`),
        userId: alice.id,
        authTime: now(),
        amr: ['pwd'],
        createdAt: now() - 1000 - i,
        expiresAt: now() + 3600,
        interactionId: undefined,
        id: `s-${String(i).padStart(3, '0')}`,
        ip: '192.0.2.1',
        userAgent: 'curl/8.5.0',
        lastSeenAt: now() - 1000 - i,
      });
    }
    const first = await browser.get('/admin/sessions');
    expect([...first.body.matchAll(/name="sign_in"/g)]).toHaveLength(50);
    expect(text(first)).toContain('61 live sign-ins');
    expect(text(first)).toContain('Page 1 of 2.');
    const next = first.body.match(/<a href="([^"]+)" rel="next">Older<\/a>/)?.[1];
    expect(next).toBe('/admin/sessions?page=2');
    const second = await browser.get(next!);
    expect([...second.body.matchAll(/name="sign_in"/g)]).toHaveLength(11);
    expect(second.body).toContain('name="sign_in" value="s-059"');
    expect(second.body).toContain('rel="prev">Newer</a>');
    // A page past the end shows the last one.
    expect([...(await browser.get('/admin/sessions?page=99')).body.matchAll(/name="sign_in"/g)]).toHaveLength(11);
    expect((await browser.get('/admin/sessions?page=abc')).status).toBe(200);
  });
});

describe('clients', () => {
  it('registers a public client (then its page), refuses bad input with the page', async () => {
    const browser = await admin();
    const res = await submit(browser, '/admin/clients', '/admin/clients', {
      client_id: 'notes',
      name: 'Team Notes',
      redirect_uris: 'https://notes.example.com/cb\r\nhttp://127.0.0.1/cb\n\n',
      type: 'public',
      grant_type_0: 'authorization_code',
      grant_type_1: 'refresh_token',
      first_party: '1',
    });
    expect(res.status).toBe(303);
    expect(res.location).toBe('/admin/clients/notes?done=created');
    expect(await t.store.findClient('notes')).toMatchObject({
      name: 'Team Notes',
      redirectUris: ['https://notes.example.com/cb', 'http://127.0.0.1/cb'],
      grantTypes: ['authorization_code', 'refresh_token'],
      secretHash: undefined,
      requirePkce: true,
      firstParty: true,
    });
    await expectAudited('client.created', { clientId: 'notes', details: { confidential: false } });
    const page = await browser.get(res.location!);
    expect(text(page)).toContain('The client was registered.');
    expect(text(page)).not.toContain('Rotate secret');

    const bad: [Record<string, string>, number, string][] = [
      [{ client_id: 'has space', redirect_uris: '', grant_type_0: 'device_code' }, 400, 'is not a valid client_id'],
      [{ client_id: 'x', redirect_uris: 'javascript:alert(1)', grant_type_0: 'authorization_code' }, 400, 'scheme "javascript:" is not allowed'],
      [{ client_id: 'x', redirect_uris: 'https://x.example/cb#frag', grant_type_0: 'authorization_code' }, 400, 'must not have a fragment'],
      [{ client_id: 'x', redirect_uris: '/relative', grant_type_0: 'authorization_code' }, 400, 'is not an absolute URI'],
      [{ client_id: 'x', redirect_uris: '', grant_type_0: 'authorization_code' }, 400, 'needs at least one redirect URI'],
      [{ client_id: 'x', redirect_uris: '' }, 400, 'Choose at least one grant type'],
      [{ client_id: 'x', redirect_uris: '', grant_type_0: 'password' }, 400, 'Unknown grant type'],
      [{ client_id: 'x', redirect_uris: '', grant_type_0: 'client_credentials', type: 'public' }, 400, 'is for confidential clients'],
      [{ client_id: 'x', redirect_uris: '', grant_type_0: 'device_code', type: 'secret' }, 400, 'Choose public or confidential'],
      [{ client_id: 'notes', redirect_uris: '', grant_type_0: 'device_code' }, 409, 'The client_id notes is taken'],
    ];
    for (const [fields, status, message] of bad) {
      const refused = await submit(browser, '/admin/clients', '/admin/clients', { type: 'public', ...fields });
      expect(refused.status, JSON.stringify(fields)).toBe(status);
      expect(text(refused)).toContain(message);
    }
    expect((await t.store.listClients()).map((c) => c.clientId).sort()).toEqual(['latchkey-cli', 'notes', 'tv']);
    expect((await browser.get('/admin/clients/nope')).status).toBe(404);
    expect((await browser.get(`/admin/clients/${'x'.repeat(200)}`)).status).toBe(400);
  });

  it('a confidential client: the secret is shown once, on the answer (no-store, not in an address), and never again', async () => {
    const browser = await admin();
    const res = await submit(browser, '/admin/clients', '/admin/clients', {
      client_id: 'billing',
      name: 'Billing',
      redirect_uris: '',
      type: 'confidential',
      grant_type_0: 'client_credentials',
    });
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.location).toBeUndefined();
    const secret = decodeEntities(res.body.match(/<code class="secret" id="client-secret">([^<]+)<\/code>/)![1]!);
    expect(secret).toMatch(/^\S{30,}$/);
    expect(text(res)).toContain('shown only this once');
    const client = (await t.store.findClient('billing'))!;
    expect(client).toMatchObject({ secretHash: sha256(secret), grantTypes: ['client_credentials'], requirePkce: false });
    // Only a digest: the console makes no client_secret_jwt clients (that keeps the secret sealed).
    expect(client.secretSealed).toBeUndefined();
    // Never again: not on its page, its list, the audit log, nor in the logs.
    for (const path of ['/admin/clients/billing', '/admin/clients', '/admin/audit']) expect((await browser.get(path)).body).not.toContain(secret);
    expect(JSON.stringify(logLines)).not.toContain(secret);
    await t.app.services.auditTrail.flush();
    expect(JSON.stringify(await t.store.listAuditEvents({ limit: 500 }))).not.toContain(secret);
    await expectAudited('client.created', { clientId: 'billing', details: { confidential: true } });
  });

  it('rotates a secret, keeping the old one for a while if asked; a public client has none', async () => {
    const browser = await admin();
    const { secret: old } = await addClient(t.store, 'billing', { confidential: true, grantTypes: ['client_credentials'] });
    const bad = await submit(browser, '/admin/clients/billing', '/admin/clients/billing/rotate-secret', { keep_old_for: 'soon' });
    expect(bad.status).toBe(400);
    expect(text(bad)).toContain('whole number of seconds');
    expect((await submit(browser, '/admin/clients/billing', '/admin/clients/billing/rotate-secret', { keep_old_for: String(31 * 86400) })).status).toBe(400);
    const res = await submit(browser, '/admin/clients/billing', '/admin/clients/billing/rotate-secret', { keep_old_for: '3600' });
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const secret = decodeEntities(res.body.match(/<code class="secret" id="client-secret">([^<]+)<\/code>/)![1]!);
    expect(text(res)).toContain('keeps working until');
    expect(await t.store.findClient('billing')).toMatchObject({
      secretHash: sha256(secret),
      previousSecretHash: sha256(old!),
      previousSecretExpiresAt: now() + 3600,
    });
    expect((await browser.get('/admin/clients/billing')).body).not.toContain(secret);
    await expectAudited('client.secret_rotated', { clientId: 'billing', details: { keepOldFor: 3600 } });
    const publicOne = await submit(browser, '/admin/clients/tv', '/admin/clients/tv/rotate-secret', { keep_old_for: '0' });
    expect(publicOne.status).toBe(400);
    expect(text(publicOne)).toContain('no secret to rotate');
    expect((await t.store.findClient('tv'))!.secretHash).toBeUndefined();
  });

  it('edits the name and addresses; invalid redirect URIs are refused with the page', async () => {
    const browser = await admin();
    await addClient(t.store, 'photos', { name: 'Photos', redirectUris: ['https://photos.example.com/cb'], grantTypes: ['authorization_code'] });
    const res = await submit(browser, '/admin/clients/photos', '/admin/clients/photos/update', {
      name: 'Photo Editor',
      redirect_uris: 'https://photos.example.com/cb\nhttps://photos.example.com/cb2',
      post_logout_redirect_uris: 'https://photos.example.com/bye',
    });
    expect(res.location).toBe('/admin/clients/photos?done=updated');
    expect(await t.store.findClient('photos')).toMatchObject({
      name: 'Photo Editor',
      redirectUris: ['https://photos.example.com/cb', 'https://photos.example.com/cb2'],
      postLogoutRedirectUris: ['https://photos.example.com/bye'],
    });
    await expectAudited('client.updated', { clientId: 'photos', details: { changed: ['name', 'redirectUris', 'postLogoutRedirectUris'] } });
    for (const redirect_uris of ['data:text/html,hi', 'not a uri', '', 'https://x.example/\u00e9']) {
      const refused = await submit(browser, '/admin/clients/photos', '/admin/clients/photos/update', {
        name: 'Photo Editor',
        redirect_uris,
        post_logout_redirect_uris: '',
      });
      expect(refused.status, redirect_uris).toBe(400);
      expect(refused.body).toContain('id="edit-error"');
      // What was typed is shown again to correct.
      expect(decodeEntities(refused.body)).toContain(redirect_uris);
    }
    expect((await t.store.findClient('photos'))!.redirectUris).toHaveLength(2);
  });

  it('disables, enables and removes a client; the built-in client can be neither disabled nor removed', async () => {
    const browser = await admin();
    const tv = await tokensFor(t, await user('alice'), 'tv');
    expect((await submit(browser, '/admin/clients/tv', '/admin/clients/tv/disable', {})).location).toBe('/admin/clients/tv?done=disabled');
    expect((await t.store.findClient('tv'))!.disabled).toBe(true);
    await expectAudited('client.disabled', { clientId: 'tv' });
    expect((await submit(browser, '/admin/clients/tv', '/admin/clients/tv/enable', {})).location).toBe('/admin/clients/tv?done=enabled');
    expect((await t.store.findClient('tv'))!.disabled).toBe(false);
    await expectAudited('client.enabled', { clientId: 'tv' });
    const removed = await submit(browser, '/admin/clients/tv', '/admin/clients/tv/remove', {});
    expect(removed.location).toBe('/admin/clients?done=removed');
    expect(await t.store.findClient('tv')).toBeUndefined();
    expect((await refresh(t, 'tv', tv.refresh_token!)).statusCode).not.toBe(200);
    await expectAudited('client.removed', { clientId: 'tv' });
    expect((await browser.get('/admin/clients/tv')).status).toBe(404);

    for (const action of ['remove', 'disable']) {
      const refused = await submit(browser, '/admin/clients/latchkey-cli', `/admin/clients/latchkey-cli/${action}`, {});
      expect(refused.status).toBe(400);
      expect(text(refused)).toContain(`A built-in client cannot be ${action === 'remove' ? 'removed' : 'disabled'}`);
    }
    expect(await t.store.findClient('latchkey-cli')).toMatchObject({ builtIn: true, disabled: false });
    expect((await browser.get('/admin/clients/latchkey-cli')).body).not.toContain('/admin/clients/latchkey-cli/remove');
  });

  it('machine grants: scopes picked from what the API declares', async () => {
    const browser = await admin();
    await addClient(t.store, 'billing', { confidential: true, grantTypes: ['client_credentials'] });
    const page = await browser.get('/admin/clients/billing');
    expect(page.body).toContain('value="read:reports"');
    const saved = await submit(browser, '/admin/clients/billing', '/admin/clients/billing/grants', { api, scope_0: 'read:reports', scope_1: 'write:reports' });
    expect(saved.location).toBe('/admin/clients/billing?done=grant_saved');
    expect(await t.store.findClientGrant('billing', api)).toMatchObject({ scopes: ['read:reports', 'write:reports'] });
    await expectAudited('client.grant_saved', { clientId: 'billing', details: { api, scopes: ['read:reports', 'write:reports'] } });
    const undeclared = await submit(browser, '/admin/clients/billing', '/admin/clients/billing/grants', { api, scope_0: 'delete:everything' });
    expect(undeclared.status).toBe(400);
    expect(text(undeclared)).toContain('declares no scope delete:everything');
    expect((await submit(browser, '/admin/clients/billing', '/admin/clients/billing/grants', { api })).status).toBe(400);
    expect((await submit(browser, '/admin/clients/billing', '/admin/clients/billing/grants', { api: 'https://nope.example', scope_0: 'x' })).status).toBe(404);
    expect((await submit(browser, '/admin/clients/tv', '/admin/clients/tv/grants', { api, scope_0: 'read:reports' })).status).toBe(400);
    expect(await t.store.findClientGrant('tv', api)).toBeUndefined();
    expect(await t.store.findClientGrant('billing', api)).toMatchObject({ scopes: ['read:reports', 'write:reports'] });
    const removed = await submit(browser, '/admin/clients/billing', '/admin/clients/billing/grants/remove', { api });
    expect(removed.location).toBe('/admin/clients/billing?done=grant_removed');
    expect(await t.store.findClientGrant('billing', api)).toBeUndefined();
    await expectAudited('client.grant_removed', { clientId: 'billing', details: { api } });
  });
});

describe('APIs', () => {
  it('registers, edits and removes an API; bad input and duplicates answer the page with 4xx', async () => {
    const browser = await admin();
    const created = await submit(browser, '/admin/apis', '/admin/apis', {
      identifier: 'https://billing.example.com',
      name: 'Billing',
      scopes: 'invoices:read\ninvoices:write\n',
    });
    expect(created.location).toBe(`/admin/apis/edit?identifier=${encodeURIComponent('https://billing.example.com')}&done=created`);
    expect(await t.store.findApi('https://billing.example.com')).toMatchObject({ name: 'Billing', scopes: ['invoices:read', 'invoices:write'] });
    await expectAudited('api.created', { details: { identifier: 'https://billing.example.com', scopes: ['invoices:read', 'invoices:write'] } });
    expect(text(await browser.get(created.location!))).toContain('The API was registered.');

    const bad: [Record<string, string>, number, string][] = [
      [{ identifier: 'has space', scopes: '' }, 400, 'API identifier must be'],
      [{ identifier: 'https://x.example', scopes: 'openid' }, 400, 'is an OpenID Connect scope'],
      [{ identifier: 'https://x.example', scopes: 'quote"d' }, 400, 'is not a valid scope name'],
      [{ identifier: api, scopes: '' }, 409, 'is registered already'],
    ];
    for (const [fields, status, message] of bad) {
      const refused = await submit(browser, '/admin/apis', '/admin/apis', { name: '', ...fields });
      expect(refused.status, JSON.stringify(fields)).toBe(status);
      expect(text(refused)).toContain(message);
    }

    const edit = `/admin/apis/edit?identifier=${encodeURIComponent(api)}`;
    const updated = await submit(browser, edit, '/admin/apis/update', { identifier: api, name: 'Report Library', scopes: 'read:reports\nshare:reports' });
    expect(updated.location).toBe(`${edit}&done=updated`);
    expect(await t.store.findApi(api)).toMatchObject({ name: 'Report Library', scopes: ['read:reports', 'share:reports'] });
    await expectAudited('api.updated', { details: { identifier: api, withdrawn: ['write:reports'] } });
    expect((await submit(browser, edit, '/admin/apis/update', { identifier: api, name: 'x', scopes: 'bad scope\\' })).status).toBe(400);
    expect((await submit(browser, edit, '/admin/apis/update', { identifier: 'https://nope.example', name: 'x', scopes: '' })).status).toBe(404);
    expect((await browser.get('/admin/apis/edit?identifier=https%3A%2F%2Fnope.example')).status).toBe(404);

    const removed = await submit(browser, edit, '/admin/apis/remove', { identifier: api });
    expect(removed.location).toBe('/admin/apis?done=removed');
    expect(await t.store.findApi(api)).toBeUndefined();
    await expectAudited('api.removed', { details: { identifier: api } });
    expect((await submit(browser, '/admin/apis', '/admin/apis/remove', { identifier: api })).status).toBe(404);
  });
});

describe('the built-in API in the console', () => {
  it('its management scopes cannot be taken away, nor the API removed: 409 with a page saying why; other changes are kept', async () => {
    const browser = await admin();
    const builtIn = `${t.config.issuer}/api/v1`;
    const before = (await t.store.findApi(builtIn))!;
    const edit = `/admin/apis/edit?identifier=${encodeURIComponent(builtIn)}`;
    const kept = before.scopes.filter((s) => s !== 'write:users');
    const narrowed = await submit(browser, edit, '/admin/apis/update', { identifier: builtIn, name: before.name, scopes: kept.join('\n') });
    expect(narrowed.status).toBe(409);
    expect(text(narrowed)).toContain('is built in (the management API): its scopes write:users cannot be removed');
    const removed = await submit(browser, edit, '/admin/apis/remove', { identifier: builtIn });
    expect(removed.status).toBe(409);
    expect(text(removed)).toContain('is built in (the management API): it cannot be removed');
    expect(await t.store.findApi(builtIn)).toEqual(before);
    expect(await stored('api.updated')).toEqual([]);
    expect(await stored('api.removed')).toEqual([]);
    // A new name, or a scope of the operator's own beside the built-in ones, is fine.
    const widened = await submit(browser, edit, '/admin/apis/update', {
      identifier: builtIn,
      name: 'Admin API',
      scopes: [...before.scopes, 'read:reports'].join('\n'),
    });
    expect(widened.location).toBe(`${edit}&done=updated`);
    expect(await t.store.findApi(builtIn)).toMatchObject({ name: 'Admin API', scopes: [...before.scopes, 'read:reports'] });
  });
});

describe('roles', () => {
  it('creates a role with permissions picked from the APIs’ scopes, edits it, gives it to people, removes it', async () => {
    const browser = await admin();
    const list = await browser.get('/admin/roles');
    expect(list.body).toContain(`value="${api}:read:reports"`);
    const created = await submit(browser, '/admin/roles', '/admin/roles', {
      name: 'reporter',
      description: 'Reads reports',
      permission_0: `${api}:read:reports`,
    });
    expect(created.location).toBe('/admin/roles/reporter?done=created');
    expect(await t.store.findRole('reporter')).toMatchObject({ description: 'Reads reports', permissions: [{ api, scope: 'read:reports' }], builtIn: false });
    await expectAudited('role.created', { details: { role: 'reporter', permissions: [`${api}:read:reports`] } });

    const bad: [Record<string, string>, number, string][] = [
      [{ name: '-bad' }, 400, 'is not a valid role name'],
      [{ name: 'x'.repeat(65) }, 400, 'is not a valid role name'],
      [{ name: 'ok', permission_0: `${api}:delete:reports` }, 400, 'declares no scope'],
      [{ name: 'ok', permission_0: 'https://nope.example:read' }, 400, 'does not start with a registered API'],
      [{ name: 'reporter' }, 409, 'A role named reporter exists already'],
      [{ name: 'admin' }, 409, 'exists already'],
    ];
    for (const [fields, status, message] of bad) {
      const refused = await submit(browser, '/admin/roles', '/admin/roles', { description: '', ...fields });
      expect(refused.status, JSON.stringify(fields)).toBe(status);
      expect(text(refused)).toContain(message);
    }

    const updated = await submit(browser, '/admin/roles/reporter', '/admin/roles/reporter/update', {
      description: 'Reads and writes',
      permission_0: `${api}:read:reports`,
      permission_1: `${api}:write:reports`,
    });
    expect(updated.location).toBe('/admin/roles/reporter?done=updated');
    expect((await t.store.findRole('reporter'))!.permissions).toEqual([
      { api, scope: 'read:reports' },
      { api, scope: 'write:reports' },
    ]);
    await expectAudited('role.updated', { details: { role: 'reporter' } });

    const alice = await user('alice');
    const added = await submit(browser, '/admin/roles/reporter', '/admin/roles/reporter/members/add', { username: 'alice' });
    expect(added.location).toBe('/admin/roles/reporter?done=member_added');
    expect((await user('alice')).roles).toEqual(['reporter']);
    await expectAudited('user.role_granted', { userId: alice.id, details: { role: 'reporter' } });
    const page = await browser.get('/admin/roles/reporter');
    expect(text(page)).toContain('alice');
    expect(text(await browser.get('/admin/roles'))).toMatch(/reporter .*Reads and writes/);
    expect((await submit(browser, '/admin/roles/reporter', '/admin/roles/reporter/members/add', { username: 'nobody' })).status).toBe(404);
    const taken = await submit(browser, '/admin/roles/reporter', '/admin/roles/reporter/members/remove', { user_id: alice.id });
    expect(taken.location).toBe('/admin/roles/reporter?done=member_removed');
    expect((await user('alice')).roles).toEqual([]);
    await expectAudited('user.role_revoked', { userId: alice.id, details: { role: 'reporter' } });

    const removed = await submit(browser, '/admin/roles/reporter', '/admin/roles/reporter/remove', {});
    expect(removed.location).toBe('/admin/roles?done=removed');
    expect(await t.store.findRole('reporter')).toBeUndefined();
    await expectAudited('role.removed', { details: { role: 'reporter' } });
    expect((await browser.get('/admin/roles/reporter')).status).toBe(404);
    expect((await browser.get(`/admin/roles/${'r'.repeat(100)}`)).status).toBe(400);
  });

  it('the built-in admin role cannot be removed', async () => {
    const browser = await admin();
    const refused = await submit(browser, '/admin/roles/admin', '/admin/roles/admin/remove', {});
    expect(refused.status).toBe(400);
    expect(text(refused)).toContain('The built-in admin role cannot be removed');
    expect(await t.store.findRole('admin')).toMatchObject({ builtIn: true, members: 2 }); // root and the bootstrap administrator
    expect(await stored('role.removed')).toEqual([]);
  });
});

describe('connectors, signing keys', () => {
  it('removes a connector: the people it created stay, signed out', async () => {
    const browser = await admin();
    await addConnector();
    await addUser(t.store, 'upstream-dan', 'dan-password', { source: 'corp' });
    // People a connector created sign in upstream: their session is made here as that sign-in would.
    const danBrowser = new Browser(injectTransport(t.app));
    await sessionFor(danBrowser, 'upstream-dan', ['fed']);
    expect((await danBrowser.get('/account')).status).toBe(200);
    const list = await browser.get('/admin/connectors');
    expect(text(list)).toContain('Corp SSO');
    expect(text(list)).toContain('https://sso.corp.example');
    const res = await submit(browser, '/admin/connectors', '/admin/connectors/corp/remove', {});
    expect(res.location).toBe('/admin/connectors?done=removed');
    expect(await t.store.findConnector('corp')).toBeUndefined();
    expect(await user('upstream-dan')).toBeDefined();
    expect((await danBrowser.get('/account')).status).toBe(303);
    await expectAudited('connector.removed', { details: { connectorId: 'corp', usersSignedOut: 1 } });
    expect((await submit(browser, '/admin/users', '/admin/connectors/corp/remove', {})).status).toBe(404);
  });

  it('rotates the signing keys: the JWKS publishes the new kid and new tokens are signed with it', async () => {
    const browser = await admin();
    const before = (await t.store.listSigningKeys()).map((k) => k.kid);
    const page = await browser.get('/admin/keys');
    for (const kid of before) expect(page.body).toContain(kid);
    const res = await submit(browser, '/admin/keys', '/admin/keys/rotate', {});
    expect(res.location).toBe('/admin/keys?done=rotated');
    const active = (await t.store.listSigningKeys()).filter((k) => k.retiredAt === undefined);
    expect(active.map((k) => k.kid).some((kid) => before.includes(kid))).toBe(false);
    const jwks = (await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json<{ keys: { kid: string }[] }>();
    for (const key of active) expect(jwks.keys.map((k) => k.kid)).toContain(key.kid);
    for (const kid of before) expect(jwks.keys.map((k) => k.kid)).toContain(kid); // still published
    const tokens = await tokensFor(t, await user('alice'), 'tv');
    expect(active.map((k) => k.kid)).toContain(decodeProtectedHeader(tokens.access_token).kid);
    await expectAudited('key.rotated', { details: { kid: active[0]!.kid } });
    const after = text(await browser.get('/admin/keys?done=rotated'));
    expect(after).toContain('New signing keys are active');
    expect(after).toContain('Retired, published until');
  });
});

describe('the audit log', () => {
  it('shows who did what, filtered by event, user, client and time, older pages by cursor', async () => {
    const browser = await admin();
    const alice = await user('alice');
    await submit(browser, `/admin/users/${alice.id}`, `/admin/users/${alice.id}/disable`, {});
    await submit(browser, '/admin/clients/tv', '/admin/clients/tv/disable', {});
    const all = await browser.get('/admin/audit');
    expect(all.status).toBe(200);
    expect(text(all)).toContain('user.disabled');
    expect(text(all)).toContain('client.disabled');
    expect(text(all)).toContain('signin.success');

    const users = text(await browser.get('/admin/audit?event=user.'));
    expect(users).toMatch(/user\.disabled root alice/);
    expect(users).not.toContain('client.disabled');
    const exact = text(await browser.get('/admin/audit?event=client.disabled'));
    expect(exact).toMatch(/client\.disabled root .*tv/);
    expect(exact).not.toContain('user.disabled');
    const byUser = text(await browser.get('/admin/audit?user=alice'));
    expect(byUser).toContain('user.disabled');
    expect(byUser).not.toContain('client.disabled');
    expect(text(await browser.get(`/admin/audit?user=${alice.id}`))).toContain('user.disabled');
    const byClient = text(await browser.get('/admin/audit?client=tv'));
    expect(byClient).toContain('client.disabled');
    expect(byClient).not.toContain('user.disabled');
    // The manual clock: everything happened at 2027-01-15T08:00 UTC.
    const at = new Date(Math.floor(t.clock()) * 1000).toISOString().slice(0, 16);
    expect(text(await browser.get(`/admin/audit?since=${at}&event=user.`))).toContain('user.disabled');
    expect(text(await browser.get(`/admin/audit?until=${at}&event=user.`))).toContain('No events match these filters');
    expect(text(await browser.get(`/admin/audit?since=2000-01-01T00:00:00Z&until=2000-01-02`))).toContain('No events match');

    for (const query of ['since=yesterday', 'until=2026-13-45T99:99', 'event=User%20Created', 'before=abc', 'since=2026-01-02&until=2026-01-01']) {
      const refused = await browser.get(`/admin/audit?${query}`);
      expect(refused.status, query).toBe(400);
      expect(refused.body).toContain('id="filters-error"');
    }
    expect((await browser.get(`/admin/audit?user=${'x'.repeat(300)}`)).status).toBe(400);
  });

  it('pages through older events with "Older events" links', async () => {
    const browser = await admin();
    const rows = Array.from({ length: 120 }, (_, i) => ({
      at: 1_800_000_000_000 + i,
      event: 'user.enabled',
      actor: 'cli',
      userId: undefined,
      clientId: undefined,
      ip: undefined,
      details: { n: i },
    }));
    await t.store.appendAuditEvents(rows);
    let page = await browser.get('/admin/audit?event=user.enabled');
    const seen: number[] = [];
    for (let i = 0; i < 5 && page.status === 200; i++) {
      seen.push(...[...page.body.matchAll(/n: (\d+)/g)].map((m) => Number(m[1])));
      const older = page.body.match(/<a href="([^"]+)" rel="next">Older events<\/a>/)?.[1];
      if (!older) break;
      expect(decodeEntities(older)).toMatch(/^\/admin\/audit\?event=user.enabled&before=\d+$/);
      page = await browser.get(decodeEntities(older));
      expect(page.body).toContain('Newest events');
    }
    expect(seen).toEqual(Array.from({ length: 120 }, (_, i) => 119 - i));
  });
});

describe('hostile input and edge cases', () => {
  it('names people typed are shown as text, never as markup (client names, role descriptions, audit details)', async () => {
    const browser = await admin();
    const script = '<script>alert(1)</script>';
    await addClient(t.store, 'xss', { name: `Evil ${script}` });
    await t.store.createRole({ name: 'xss', description: `Role ${script}`, permissions: [], createdAt: now() });
    await submit(browser, '/admin/clients/xss', '/admin/clients/xss/update', { name: `Renamed ${script}`, redirect_uris: '', post_logout_redirect_uris: '' });
    await t.app.services.auditTrail.flush();
    await t.store.appendAuditEvents([
      { at: now() * 1000, event: 'user.created', actor: 'cli', userId: undefined, clientId: 'xss', ip: undefined, details: { username: script } },
    ]);
    for (const path of ['/admin/clients', '/admin/clients/xss', '/admin/roles', '/admin/roles/xss', '/admin/audit']) {
      const page = await browser.get(path);
      expect(page.status, path).toBe(200);
      expect(page.body, path).not.toContain(script);
      expect(page.body, path).toContain('&lt;script&gt;');
    }
  });

  it('a path cut through an emoji (or a lone surrogate) is a 4xx or the sign-in page, never a 500, for anyone', async () => {
    const browser = await setUp();
    const emoji = encodeURIComponent('😀');
    for (const path of [
      `/admin/users/${'a'.repeat(127)}${emoji}/disable`,
      `/admin/clients/${'a'.repeat(127)}${emoji}/remove`,
      `/admin/roles/${'a'.repeat(63)}${emoji}/remove`,
      '/admin/users/%ED%A0%80/disable',
    ]) {
      const res = await browser.post(path, {});
      expect(res.status, path).toBeLessThan(500);
    }
    await signInAs(browser);
    for (const path of [
      `/admin/users/${'a'.repeat(127)}${emoji}/disable`,
      `/admin/clients/${'a'.repeat(127)}${emoji}/remove`,
      `/admin/roles/${'a'.repeat(63)}${emoji}/remove`,
    ]) {
      const res = await submit(browser, '/admin/users', path, {});
      expect(res.status, path).toBeLessThan(500);
    }
  });

  it('an administrator cannot remove their own second factors here, nor change the built-in client’s redirect URIs', async () => {
    const browser = await admin();
    const root = await user('root');
    const own = await submit(browser, `/admin/users/${root.id}`, `/admin/users/${root.id}/second-factors/reset`, {});
    expect(own.status).toBe(400);
    expect(text(own)).toContain('your own second factors');
    const builtIn = await submit(browser, '/admin/clients/latchkey-cli', '/admin/clients/latchkey-cli/update', {
      name: 'Latchkey CLI',
      redirect_uris: 'https://evil.example/cb',
      post_logout_redirect_uris: '',
    });
    expect(builtIn.status).toBe(400);
    expect(text(builtIn)).toContain('fixed');
    expect((await t.store.findClient('latchkey-cli'))!.redirectUris).toEqual(['http://127.0.0.1/callback']);
  });

  it('an API removed while a grant or a role is saved: 409 with the page, not a 500', async () => {
    const browser = await admin();
    await addClient(t.store, 'billing', { confidential: true, grantTypes: ['client_credentials'] });
    const token = await csrfOf(browser, '/admin/clients/billing');
    const roleToken = await csrfOf(browser, '/admin/roles');
    const save = t.store.saveClientGrant.bind(t.store);
    const create = t.store.createRole.bind(t.store);
    // The API goes between the page's read and the write.
    t.store.saveClientGrant = async (grant) => (await t.store.removeApi(api), save(grant));
    const grant = await browser.post('/admin/clients/billing/grants', { csrf_token: token, api, scope_0: 'read:reports' });
    expect(grant.status).toBe(409);
    expect(text(grant)).toContain('removed meanwhile');
    await addApi(t.store, api, 'Reports', [], ['read:reports']);
    t.store.createRole = async (role) => (await t.store.removeApi(api), create(role));
    const role = await browser.post('/admin/roles', { csrf_token: roleToken, name: 'readers', description: '', permission_0: `${api}:read:reports` });
    expect(role.status).toBe(409);
    expect(await t.store.findRole('readers')).toBeUndefined();
  });

  it('the audit log filters by who acted, and refuses a day that does not exist', async () => {
    const browser = await admin();
    const alice = await user('alice');
    await submit(browser, `/admin/users/${alice.id}`, `/admin/users/${alice.id}/disable`, {});
    await t.app.services.auditTrail.flush();
    await t.store.appendAuditEvents([
      { at: now() * 1000, event: 'user.created', actor: 'cli', userId: undefined, clientId: undefined, ip: undefined, details: { username: 'zed' } },
    ]);
    const byRoot = text(await browser.get('/admin/audit?actor=root'));
    expect(byRoot).toContain('user.disabled');
    expect(byRoot).not.toContain('zed');
    const byCli = text(await browser.get('/admin/audit?actor=cli'));
    expect(byCli).toContain('zed');
    expect(byCli).not.toContain('user.disabled');
    const bad = await browser.get('/admin/audit?since=2026-02-30T10:00');
    expect(bad.status).toBe(400);
  });
});
