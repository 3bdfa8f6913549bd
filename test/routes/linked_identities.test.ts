/**
 * Linked upstream identities through the pages, with app.inject and a stand-in OpenID provider on a
 * real socket: a connector with --trust-email links the upstream account to the local account of
 * the same verified email; the person sees that link on /account and removes it (CSRF-protected,
 * only their own, never the last way in), a password reset offers to remove it, the admin console
 * lists and unlinks it; and once removed, the upstream account can no longer sign in — not as that
 * user, not linked again by its email, not as a new account.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connectorSecretContext } from '../../src/connectors/runtime.js';
import { forgetDiscovery } from '../../src/connectors/oidc_upstream.js';
import { randomSecret, sha256 } from '../../src/crypto/secrets.js';
import { linkPrefix } from '../../src/mail/mailed_links.js';
import { addClient, addUser, testApp, type TestApp } from '../helpers/app.js';
import { Browser, decodeEntities, inputValue, injectTransport, signIn, type BrowserResponse } from '../helpers/browser.js';
import { refresh, tokensFor } from '../helpers/flows.js';
import { passkey } from '../helpers/records.js';
import { startFakeOidcProvider, type FakeOidcProvider } from '../helpers/upstreams.js';

let t: TestApp;
let idp: FakeOidcProvider;
const logLines: string[] = [];

beforeAll(async () => {
  idp = await startFakeOidcProvider();
});
afterAll(() => idp.close());
beforeEach(() => {
  forgetDiscovery();
  idp.behaviour.person = { sub: 'upstream-sub-1', email: 'pat@upstream.example', email_verified: true, name: 'Pat Upstream', preferred_username: 'pat' };
});
afterEach(() => t?.close());

/** The server with the trusting connector `acme` ("Acme SSO"), local alice (pat@upstream.example, verified) and bob. */
async function setUp(env: Record<string, string> = {}) {
  logLines.length = 0;
  t = await testApp(env, { logLines });
  await t.store.createConnector({
    id: 'acme',
    type: 'oidc',
    name: 'Acme SSO',
    config: { issuer: idp.base, clientId: idp.clientId, trustEmail: true },
    secret: t.app.services.secretBox.seal(connectorSecretContext('acme'), idp.clientSecret),
    createdAt: 1_800_000_000,
  });
  await addUser(t.store, 'alice', 'alice-password', { email: 'pat@upstream.example' });
  await addUser(t.store, 'bob', 'bob-password');
  await addClient(t.store, 'tv', { name: 'Living Room TV' });
}

const newBrowser = () => new Browser(injectTransport(t.app));
const user = async (name: string) => (await t.store.findUserByUsername(name))!;
const usersCount = async () => (await t.store.listUsers()).length;
const audited = () => logLines.map((l) => JSON.parse(l) as { event?: string; [k: string]: unknown }).filter((l) => l.event);
const text = (res: BrowserResponse) => decodeEntities(res.body.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' '));

/** "Sign in with Acme SSO" in `browser`, through the stand-in upstream: the callback's answer. */
async function signInUpstream(browser: Browser, returnTo = '/account'): Promise<BrowserResponse> {
  const login = await browser.get(`/login?return_to=${encodeURIComponent(returnTo)}`);
  const start = await browser.post('/login/connector', {
    csrf_token: inputValue(login.body, 'csrf_token')!,
    return_to: inputValue(login.body, 'return_to')!,
    connector: 'acme',
  });
  const to = start.body.match(/<meta http-equiv="refresh" content="0;url=([^"]+)">/)?.[1];
  expect(to, start.body.slice(0, 300)).toBeDefined();
  const upstream = await fetch(decodeEntities(to!), { redirect: 'manual' });
  const callback = new URL(upstream.headers.get('location')!);
  return browser.get(callback.pathname + callback.search);
}

async function signInWithPassword(browser: Browser, who: string, returnTo = '/account') {
  const res = await signIn(browser, await browser.get(`/login?fresh=1&return_to=${encodeURIComponent(returnTo)}`), who, `${who}-password`);
  expect(res.status, res.body.slice(0, 300)).toBe(303);
}

/** The upstream account links to alice by her verified email (the connector trusts emails). */
async function linkAlice(): Promise<Browser> {
  const browser = newBrowser();
  const answer = await signInUpstream(browser);
  expect(answer.status).toBe(303);
  expect((await t.store.findIdentity('acme', 'upstream-sub-1'))?.userId).toBe((await user('alice')).id);
  return browser;
}

const csrfOf = async (browser: Browser, path = '/account') => inputValue((await browser.get(path)).body, 'csrf_token')!;

describe('/account: linked sign-ins', () => {
  it('lists each upstream identity that signs the person in, by its connector’s name, with a Remove button in a CSRF-protected form', async () => {
    await setUp();
    const viaUpstream = await linkAlice();
    const page = await viaUpstream.get('/account');
    expect(page.status).toBe(200);
    expect(page.body).toContain('Linked sign-ins');
    const section = page.body.slice(page.body.indexOf('id="linked-heading"'), page.body.indexOf('id="devices-heading"'));
    expect(section).toContain('<strong>Acme SSO</strong>');
    expect(section).toMatch(
      /<form method="post" action="\/account\/linked-sign-ins\/remove" class="inline">\s*<input type="hidden" name="csrf_token" value="[^"]+">\s*<button type="submit" class="secondary" name="connector" value="acme"/,
    );
    // Someone with nothing linked sees none.
    const bob = newBrowser();
    await signInWithPassword(bob, 'bob');
    const bobs = await bob.get('/account');
    expect(bobs.body.slice(bobs.body.indexOf('id="linked-heading"'), bobs.body.indexOf('id="devices-heading"'))).toContain('None.');
  });

  it('removing it: that upstream account can no longer sign in as the person (nor be linked again, nor get an account of its own); every other sign-in ends, this browser stays; audited', async () => {
    await setUp();
    const viaUpstream = await linkAlice();
    const here = newBrowser();
    await signInWithPassword(here, 'alice');
    const tv = await tokensFor(t, await user('alice'), 'tv');
    const users = await usersCount();

    const removed = await here.post('/account/linked-sign-ins/remove', { csrf_token: await csrfOf(here), connector: 'acme' });
    expect(removed.status).toBe(200);
    expect(text(removed)).toContain('Acme SSO no longer signs you in here, and every other sign-in has ended.');
    expect(removed.body.slice(removed.body.indexOf('id="linked-heading"'), removed.body.indexOf('id="devices-heading"'))).toContain('None.');
    expect(await t.store.findIdentity('acme', 'upstream-sub-1')).toBeUndefined();
    // Whoever came in through it (and every other sign-in) is out; this browser is not.
    expect((await viaUpstream.get('/account')).status).toBe(303);
    expect((await refresh(t, 'tv', tv.refresh_token!)).json().error).toBe('invalid_grant');
    expect((await here.get('/account')).status).toBe(200);
    expect(audited().find((e) => e.event === 'user.identity_unlinked')).toMatchObject({
      userId: (await user('alice')).id,
      connectorId: 'acme',
      subjects: ['upstream-sub-1'],
      source: 'account',
    });

    // The upstream account tries again: refused, with nothing linked or made.
    const again = await signInUpstream(newBrowser());
    expect(again.status).toBe(403);
    expect(text(again)).toContain('Signing in this way was removed from your account.');
    expect(await t.store.findIdentity('acme', 'upstream-sub-1')).toBeUndefined();
    expect(await usersCount()).toBe(users);
    expect(
      audited()
        .filter((e) => e.event === 'upstream.signin_failure')
        .at(-1),
    ).toMatchObject({ connectorId: 'acme', reason: 'not_allowed' });
  });

  it('a form without its token, with a forged one or with another form’s, is refused and removes nothing', async () => {
    await setUp();
    const browser = await linkAlice();
    const otherFormToken = inputValue((await browser.get('/account/security')).body, 'csrf_token');
    expect(otherFormToken).toBeDefined();
    for (const csrf_token of [undefined, '', 'forged', otherFormToken]) {
      const res = await browser.post('/account/linked-sign-ins/remove', { ...(csrf_token === undefined ? {} : { csrf_token }), connector: 'acme' });
      expect(res.status, String(csrf_token)).toBe(403);
    }
    expect(await t.store.findIdentity('acme', 'upstream-sub-1')).toBeDefined();
    // Not signed in: to the sign-in page.
    const nobody = await newBrowser().post('/account/linked-sign-ins/remove', { csrf_token: 'x', connector: 'acme' });
    expect(nobody.status).toBe(303);
    expect(nobody.location).toBe('/login?return_to=%2Faccount');
    expect(await t.store.findIdentity('acme', 'upstream-sub-1')).toBeDefined();
  });

  it('odd input (an over-long, empty, control-character or repeated connector) gets a clear 4xx, never a 5xx', async () => {
    await setUp();
    const browser = await linkAlice();
    const csrf_token = await csrfOf(browser);
    for (const connector of ['x'.repeat(100), '', '\u0000', 'acme\n', '../acme']) {
      const res = await browser.post('/account/linked-sign-ins/remove', { csrf_token, connector });
      expect(res.status, JSON.stringify(connector)).toBeGreaterThanOrEqual(400);
      expect(res.status, JSON.stringify(connector)).toBeLessThan(500);
    }
    const repeated = await t.app.inject({
      method: 'POST',
      url: '/account/linked-sign-ins/remove',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: [...browser.cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
      payload: `csrf_token=${encodeURIComponent(csrf_token)}&connector=acme&connector=acme`,
    });
    expect(repeated.statusCode).toBe(400);
    expect(await t.store.findIdentity('acme', 'upstream-sub-1')).toBeDefined();
  });

  it('only the person’s own links: another person naming that connector removes nothing of theirs', async () => {
    await setUp();
    await linkAlice();
    const bob = newBrowser();
    await signInWithPassword(bob, 'bob');
    const res = await bob.post('/account/linked-sign-ins/remove', { csrf_token: await csrfOf(bob), connector: 'acme' });
    expect(res.status).toBe(404);
    expect(text(res)).toContain('That service is not linked to your account.');
    expect((await t.store.findIdentity('acme', 'upstream-sub-1'))?.userId).toBe((await user('alice')).id);
    expect((await bob.get('/account')).status).toBe(200);
    expect(audited().some((e) => e.event === 'user.identity_unlinked')).toBe(false);
  });

  it('the last way in is refused with a clear message: an account the upstream made, with no password or passkey', async () => {
    await setUp();
    idp.behaviour.person = { sub: 'upstream-quinn', email: 'quinn@upstream.example', email_verified: true, preferred_username: 'quinn' };
    const browser = newBrowser();
    expect((await signInUpstream(browser)).status).toBe(303);
    const page = await browser.get('/account');
    expect(text(page)).toContain('This is the only way you sign in here, so it cannot be removed');
    expect(page.body).not.toContain('action="/account/linked-sign-ins/remove"');
    const refused = await browser.post('/account/linked-sign-ins/remove', { csrf_token: await csrfOf(browser), connector: 'acme' });
    expect(refused.status).toBe(409);
    expect(text(refused)).toContain('Acme SSO is the only way you sign in here, so it cannot be removed.');
    expect(await t.store.findIdentity('acme', 'upstream-quinn')).toBeDefined();
    expect((await browser.get('/account')).status).toBe(200);
    // A passkey does not count here: on this plain-http issuer passkeys cannot sign in.
    await t.store.createPasskey(passkey({ userId: (await user('quinn')).id }));
    expect((await browser.post('/account/linked-sign-ins/remove', { csrf_token: await csrfOf(browser), connector: 'acme' })).status).toBe(409);
    expect(await t.store.findIdentity('acme', 'upstream-quinn')).toBeDefined();
  });

  it('a passkey counts as another way in where passkeys sign in (a secure issuer), and not where they do not', async () => {
    await setUp({ LATCHKEY_ISSUER: 'http://localhost:3000' });
    idp.behaviour.person = { sub: 'upstream-quinn', email: 'quinn@upstream.example', email_verified: true, preferred_username: 'quinn' };
    const browser = newBrowser();
    expect((await signInUpstream(browser)).status).toBe(303);
    const quinn = await user('quinn');
    await t.store.createPasskey(passkey({ userId: quinn.id }));
    const removed = await browser.post('/account/linked-sign-ins/remove', { csrf_token: await csrfOf(browser), connector: 'acme' });
    expect(removed.status).toBe(200);
    expect(await t.store.listIdentities(quinn.id)).toEqual([]);
  });

  it('a new password says which linked sign-ins still work, beside the page that removes them', async () => {
    await setUp();
    await linkAlice();
    const browser = newBrowser();
    await signInWithPassword(browser, 'alice');
    const page = await browser.get('/account');
    expect(text(page)).toContain('A new password does not change your linked sign-ins below');
    const changed = await browser.post('/account/password', {
      csrf_token: await csrfOf(browser),
      current_password: 'alice-password',
      new_password: 'a-new-password',
    });
    expect(changed.status).toBe(200);
    expect(text(changed)).toContain(
      'Your password was changed, and every other sign-in has ended. Acme SSO can still sign you in: remove it under “Linked sign-ins”',
    );
    expect(changed.body).toContain('name="connector" value="acme"');
  });
});

describe('a password reset', () => {
  /** A reset link for `who` (alice), as the mail would carry it. */
  async function resetLink(who = 'alice'): Promise<string> {
    const secret = randomSecret(linkPrefix.password_reset);
    const now = Math.floor(t.clock());
    const person = await user(who);
    await t.store.createEmailToken({
      tokenHash: sha256(secret),
      userId: person.id,
      purpose: 'password_reset',
      email: person.email,
      createdAt: now,
      expiresAt: now + 1800,
      usedAt: undefined,
    });
    return secret;
  }

  it('names the linked sign-ins a new password does not change, and removes them when asked: the upstream account is then refused', async () => {
    await setUp();
    await linkAlice();
    const secret = await resetLink();
    const browser = newBrowser();
    const form = await browser.get(`/login/reset?token=${secret}`);
    expect(form.status).toBe(200);
    expect(text(form)).toContain('Signing in with Acme SSO also works for this account, and a new password does not change that.');
    expect(form.body).toMatch(/<input id="remove_linked_sign_ins" name="remove_linked_sign_ins" type="checkbox" value="1">/);
    // An account with nothing linked is offered no such choice.
    const bobs = await newBrowser().get(`/login/reset?token=${await resetLink('bob')}`);
    expect(bobs.status).toBe(200);
    expect(bobs.body).not.toContain('remove_linked_sign_ins');
    // Showing the form spends nothing.
    expect(await t.store.findEmailToken(sha256(secret), 'password_reset', Math.floor(t.clock()))).toBeDefined();
    const done = await browser.post('/login/reset', {
      csrf_token: inputValue(form.body, 'csrf_token')!,
      token: secret,
      new_password: 'a-new-password',
      remove_linked_sign_ins: '1',
    });
    expect(done.status).toBe(200);
    expect(text(done)).toContain('Signing in with Acme SSO was removed from your account.');
    expect(await t.store.findIdentity('acme', 'upstream-sub-1')).toBeUndefined();
    expect(audited().find((e) => e.event === 'user.identity_unlinked')).toMatchObject({ connectorId: 'acme', source: 'password_reset' });
    expect((await signInUpstream(newBrowser())).status).toBe(403);
  });

  it('left unticked, the link stays, and the confirmation says it still signs in', async () => {
    await setUp();
    await linkAlice();
    const secret = await resetLink();
    const browser = newBrowser();
    const form = await browser.get(`/login/reset?token=${secret}`);
    const done = await browser.post('/login/reset', { csrf_token: inputValue(form.body, 'csrf_token')!, token: secret, new_password: 'a-new-password' });
    expect(done.status).toBe(200);
    expect(text(done)).toContain('Signing in with Acme SSO still works for your account, whatever its password.');
    expect(await t.store.findIdentity('acme', 'upstream-sub-1')).toBeDefined();
  });
});

describe('the admin console’s user page', () => {
  async function admin() {
    await setUp({ LATCHKEY_MFA: 'off' });
    await addUser(t.store, 'root', 'root-password', { roles: ['admin'] });
    const browser = newBrowser();
    await signInWithPassword(browser, 'root', '/admin');
    return browser;
  }

  it('lists the linked identities; Unlink (admin only, CSRF form, audited) keeps that upstream account out; Allow again lets it back', async () => {
    const browser = await admin();
    const viaUpstream = await linkAlice();
    const alice = await user('alice');
    const path = `/admin/users/${encodeURIComponent(alice.id)}`;
    const page = await browser.get(path);
    expect(page.status).toBe(200);
    const section = text(page).slice(text(page).indexOf('Linked sign-ins'));
    expect(section).toContain('Acme SSO (acme) · subject upstream-sub-1');
    expect(page.body).toMatch(
      /action="[^"]+\/identities\/unlink" class="inline">\s*<input type="hidden" name="csrf_token" value="[^"]+">\s*<button type="submit" class="danger small" name="connector" value="acme"/,
    );

    // Without the console's token, or by someone who is not an administrator: refused, nothing changes.
    expect((await browser.post(`${path}/identities/unlink`, { csrf_token: 'forged', connector: 'acme' })).status).toBe(403);
    const bob = newBrowser();
    await signInWithPassword(bob, 'bob');
    expect((await bob.post(`${path}/identities/unlink`, { csrf_token: await csrfOf(bob), connector: 'acme' })).status).toBe(403);
    expect(await t.store.findIdentity('acme', 'upstream-sub-1')).toBeDefined();
    // A connector they have nothing at: 404 with the page.
    expect((await browser.post(`${path}/identities/unlink`, { csrf_token: await csrfOf(browser, path), connector: 'other' })).status).toBe(404);

    const unlinked = await browser.post(`${path}/identities/unlink`, { csrf_token: await csrfOf(browser, path), connector: 'acme' });
    expect(unlinked.status).toBe(303);
    const after = await browser.get(unlinked.location!);
    expect(text(after)).toContain('The upstream identity was unlinked');
    expect(text(after)).toContain('No upstream identity signs them in.');
    expect(text(after)).toMatch(/Removed Acme SSO \(acme\) · subject upstream-sub-1 · removed/);
    expect(await t.store.findIdentity('acme', 'upstream-sub-1')).toBeUndefined();
    expect((await viaUpstream.get('/account')).status).toBe(303);
    expect(audited().find((e) => e.event === 'user.identity_unlinked')).toMatchObject({
      actor: 'root',
      userId: alice.id,
      connectorId: 'acme',
      source: 'admin',
    });
    expect((await signInUpstream(newBrowser())).status).toBe(403);

    // Allowed again, its next sign-in links it by email once more.
    const allowed = await browser.post(`${path}/identities/allow`, { csrf_token: await csrfOf(browser, path), connector: 'acme' });
    expect(allowed.status).toBe(303);
    expect(text(await browser.get(allowed.location!))).toContain('That upstream account may sign in again');
    expect(audited().find((e) => e.event === 'user.identity_allowed_again')).toMatchObject({ actor: 'root', userId: alice.id, connectorId: 'acme' });
    expect((await signInUpstream(newBrowser())).status).toBe(303);
    expect((await t.store.findIdentity('acme', 'upstream-sub-1'))?.userId).toBe(alice.id);
  });

  it('an administrator’s own links are removed on their account page, not here', async () => {
    const browser = await admin();
    idp.behaviour.person = { sub: 'upstream-root', email: 'root@example.com', email_verified: true, preferred_username: 'root' };
    await signInUpstream(newBrowser());
    const root = await user('root');
    expect((await t.store.findIdentity('acme', 'upstream-root'))?.userId).toBe(root.id);
    const path = `/admin/users/${encodeURIComponent(root.id)}`;
    const res = await browser.post(`${path}/identities/unlink`, { csrf_token: await csrfOf(browser, path), connector: 'acme' });
    expect(res.status).toBe(400);
    expect(text(res)).toContain('Remove your own linked sign-ins on your account page.');
    expect(await t.store.findIdentity('acme', 'upstream-root')).toBeDefined();
  });
});
