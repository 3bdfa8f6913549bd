/**
 * Signing in through upstream identity providers, against stand-in upstreams on real
 * sockets (test/helpers/upstreams.ts): the OIDC and GitHub flows, the account rules (a stable
 * `sub`, linking only by a verified email with --trust-email), and the attacks — a forged or
 * replayed state, a wrong nonce, issuer or audience, a mix-up, a denied or dead upstream — each
 * ending on a clear page with nothing created.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { connectorSecretContext } from '../../src/connectors/runtime.js';
import { forgetDiscovery } from '../../src/connectors/oidc_upstream.js';
import type { ConnectorType } from '../../src/store/store.js';
import { addApi, addClient, addUser, form, pkcePair, testApp, type TestApp } from '../helpers/app.js';
import { tokensFor } from '../helpers/flows.js';
import { Browser, inputValue, injectTransport, type BrowserResponse } from '../helpers/browser.js';
import { startFakeGithub, startFakeOidcProvider, startSilentServer, type FakeGithub, type FakeOidcProvider } from '../helpers/upstreams.js';

let t: TestApp;
let browser: Browser;
let idp: FakeOidcProvider;
let github: FakeGithub;

beforeAll(async () => {
  idp = await startFakeOidcProvider();
  github = await startFakeGithub();
});
afterAll(async () => {
  await idp.close();
  await github.close();
});

async function addConnector(id: string, type: ConnectorType, config: Record<string, unknown>, secret: string | undefined, name = id) {
  await t.store.createConnector({
    id,
    type,
    name,
    config,
    secret: secret === undefined ? undefined : t.app.services.secretBox.seal(connectorSecretContext(id), secret),
    createdAt: 1_800_000_000,
  });
}

beforeEach(async () => {
  forgetDiscovery();
  idp.behaviour.person = {
    sub: 'upstream-sub-1',
    email: 'pat@upstream.example',
    email_verified: true,
    name: 'Pat Upstream',
    preferred_username: 'pat',
    groups: ['staff', 'admins'],
  };
  idp.behaviour.idTokenOverrides = {};
  idp.behaviour.idTokenOmits = [];
  idp.behaviour.responseIss = undefined;
  idp.behaviour.authorizeError = undefined;
  idp.behaviour.hang.clear();
  idp.behaviour.authorizationOrigin = undefined;
  idp.behaviour.signWithUnpublishedKey = false;
  idp.behaviour.authTime = undefined;
  github.authorizeError = undefined;
  github.hang.clear();
  github.flood.clear();
  github.account.orgs = ['acme'];
  t = await testApp({ LATCHKEY_UPSTREAM_TIMEOUT: '1' });
  await addConnector('acme', 'oidc', { issuer: idp.base, clientId: idp.clientId, groupsClaim: 'groups' }, idp.clientSecret, 'Acme SSO');
  await addConnector('gh', 'github', { clientId: github.clientId, apiUrl: github.apiUrl, orgs: ['acme'] }, github.clientSecret, 'GitHub');
  browser = new Browser(injectTransport(t.app));
});
afterEach(() => t.close());

const usersCount = () => (t.store.db.prepare('SELECT count(*) AS n FROM users').get() as { n: number }).n;
const identitiesCount = () => (t.store.db.prepare('SELECT count(*) AS n FROM user_identities').get() as { n: number }).n;

/** Press "Sign in with <connector>" on the sign-in page; returns the page that moves on to the upstream. */
async function startWith(connector: string, returnTo = '/activate'): Promise<BrowserResponse> {
  const login = await browser.get(`/login?return_to=${encodeURIComponent(returnTo)}`);
  return browser.post('/login/connector', { csrf_token: inputValue(login.body, 'csrf_token')!, return_to: inputValue(login.body, 'return_to')!, connector });
}

/** Where the "Continuing to …" page sends the browser (its meta refresh, and the same as its link). */
function upstreamUrl(start: BrowserResponse): string {
  expect(start.status).toBe(200);
  const refresh = start.body.match(/<meta http-equiv="refresh" content="0;url=([^"]+)">/)?.[1];
  expect(refresh).toBeDefined();
  const url = refresh!
    .replace(/&amp;/g, '&')
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"');
  expect(start.body).toContain(`href="${refresh}"`);
  return url;
}

/** The upstream's part (it answers at once), then the callback in this browser. */
async function throughUpstream(start: BrowserResponse): Promise<{ callback: URL; answer: BrowserResponse }> {
  const upstream = await fetch(upstreamUrl(start), { redirect: 'manual' });
  expect(upstream.status).toBe(302);
  const callback = new URL(upstream.headers.get('location')!);
  expect(callback.origin).toBe('http://latchkey.test');
  return { callback, answer: await browser.get(callback.pathname + callback.search) };
}

async function signedInUser() {
  const res = await browser.get('/login');
  expect(res.status).toBe(303); // signed in: the page sends the person on
  return t.store.findUserByUsername('pat');
}

describe('the sign-in page', () => {
  it('offers a button per oidc and github connector, in a CSRF-protected form; LDAP ones sign in through the password form', async () => {
    await addConnector('corp', 'ldap', { url: 'ldap://127.0.0.1:1', bindDn: 'cn=x', userBase: 'ou=people' }, 'pw');
    const page = await browser.get('/login');
    expect(page.body).toMatch(/<form method="post" action="\/login\/connector">/);
    expect(page.body).toContain('<button type="submit" name="connector" value="acme" class="secondary connector">Sign in with Acme SSO</button>');
    expect(page.body).toContain('value="gh"');
    expect(page.body).not.toContain('value="corp"');
    const connectorForm = page.body.slice(page.body.indexOf('action="/login/connector"'));
    expect(connectorForm).toMatch(/name="csrf_token" value="[^"]+"/);
  });

  it("the page's forms may end only here (or at the client an authorization returns to): upstreams are reached through a page of ours", async () => {
    const page = await browser.get('/login');
    const formAction = page.headers['content-security-policy']!.split('; ').find((d) => d.startsWith('form-action'));
    expect(formAction).toBe("form-action 'self'");
  });

  it('an upstream whose sign-in page is on another origin than its issuer is reached all the same', async () => {
    idp.behaviour.authorizationOrigin = idp.base.replace('127.0.0.1', 'localhost');
    const res = await startWith('acme');
    expect(upstreamUrl(res).startsWith(`${idp.behaviour.authorizationOrigin}/authorize?`)).toBe(true);
    expect(res.body).toContain('Continuing to Acme SSO');
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('a connector button without the CSRF token is refused', async () => {
    const res = await browser.post('/login/connector', { connector: 'acme' });
    expect(res.status).toBe(403);
    expect(res.location).toBeUndefined();
  });

  it('an unknown connector (or an LDAP one) ends on a page', async () => {
    expect((await startWith('nope')).status).toBe(400);
  });
});

describe('an OpenID Connect upstream', () => {
  it('sends the person upstream with state, nonce and PKCE S256 to the registered redirect URI', async () => {
    const start = await startWith('acme');
    const url = new URL(upstreamUrl(start));
    expect(url.origin + url.pathname).toBe(`${idp.base}/authorize`);
    expect(url.searchParams.get('client_id')).toBe(idp.clientId);
    expect(url.searchParams.get('redirect_uri')).toBe('http://latchkey.test/connectors/acme/callback');
    expect(url.searchParams.get('response_type')).toBe('code');
    expect(url.searchParams.get('scope')).toBe('openid email profile');
    expect(url.searchParams.get('state')).toMatch(/^[A-Za-z0-9_-]{30,}$/);
    expect(url.searchParams.get('nonce')).toMatch(/^[A-Za-z0-9_-]{30,}$/);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('prompt')).toBeNull();
    expect(start.headers['set-cookie']).toMatch(/latchkey_upstream=lk1\./);
    expect(start.headers['set-cookie']).toMatch(/HttpOnly/i);
  });

  it('a first sign-in creates a user bound to the upstream identity, with its groups in the tokens; later ones find the same user', async () => {
    const { answer } = await throughUpstream(await startWith('acme'));
    expect(answer.status).toBe(303);
    expect(answer.location).toBe('/activate');
    const user = await signedInUser();
    expect(user).toMatchObject({ source: 'acme', email: 'pat@upstream.example', emailVerified: false, name: 'Pat Upstream', groups: ['staff', 'admins'] });
    expect(await t.store.findIdentity('acme', 'upstream-sub-1')).toMatchObject({ userId: user!.id });

    // Again, with a changed profile upstream: the same user (same sub), refreshed.
    idp.behaviour.person = { ...idp.behaviour.person, name: 'Pat Renamed', groups: ['staff'] };
    await browser.post('/logout', {});
    await throughUpstream(await startWith('acme'));
    const again = await t.store.findUserByUsername('pat');
    expect(again!.id).toBe(user!.id);
    expect(again).toMatchObject({ name: 'Pat Renamed', groups: ['staff'] });
    expect(usersCount()).toBe(2); // the bootstrap admin and pat
  });

  it('groups reach the access token and the id_token of a client the person then signs in to', async () => {
    await addClient(t.store, 'web', { redirectUris: ['https://app.example.com/cb'], grantTypes: ['authorization_code'], firstParty: true });
    const { verifier, challenge } = pkcePair();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: 'web',
      redirect_uri: 'https://app.example.com/cb',
      scope: 'openid email',
      state: 's1',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    const toLogin = await browser.get(`/authorize?${query}`);
    const returnTo = decodeURIComponent(toLogin.location!.split('return_to=')[1]!.split('&')[0]!);
    const { answer } = await throughUpstream(await startWith('acme', returnTo));
    expect(answer.location).toBe(returnTo);
    const done = await browser.get(answer.location!);
    const code = new URL(done.location!).searchParams.get('code')!;
    const tokens = (
      await t.app.inject({
        method: 'POST',
        url: '/oauth/token',
        ...form({ grant_type: 'authorization_code', client_id: 'web', code, redirect_uri: 'https://app.example.com/cb', code_verifier: verifier }),
      })
    ).json();
    expect(decodeJwt(tokens.access_token).groups).toEqual(['staff', 'admins']);
    // acme has no --trust-email: its word that the address is verified is not passed on.
    expect(decodeJwt(tokens.id_token)).toMatchObject({ groups: ['staff', 'admins'], email: 'pat@upstream.example', email_verified: false });
  });

  it('claims the id_token lacks come from userinfo', async () => {
    idp.behaviour.idTokenOmits = ['email', 'name', 'groups', 'preferred_username', 'email_verified'];
    await throughUpstream(await startWith('acme'));
    expect(await t.store.findUserByUsername('pat')).toMatchObject({ email: 'pat@upstream.example', groups: ['staff', 'admins'] });
  });
});

describe('roles granted by upstream groups', () => {
  const reports = 'https://reports.example.com';

  async function signInThroughAcme() {
    await browser.post('/logout', {});
    const { answer } = await throughUpstream(await startWith('acme'));
    expect(answer.status).toBe(303);
    return (await signedInUser())!;
  }

  it('a role naming an upstream group is held while the upstream reports it: its scopes reach the tokens, and go at the next sign-in without the group', async () => {
    await addApi(t.store, reports, 'Reports', [], ['read:reports']);
    await t.store.createRole({
      name: 'analyst',
      description: undefined,
      permissions: [{ api: reports, scope: 'read:reports' }],
      groups: ['admins'],
      createdAt: 1_800_000_000,
    });
    await t.store.updateRole('admin', { groups: ['platform'] });
    await addClient(t.store, 'cli', { grantTypes: ['device_code', 'refresh_token'] });
    idp.behaviour.person = { ...idp.behaviour.person, groups: ['staff', 'admins', 'platform'] };

    const pat = await signInThroughAcme();
    expect(pat.roles).toEqual(['admin', 'analyst']);
    const granted = await tokensFor(t, pat, 'cli', { scope: 'openid read:reports', audience: reports });
    expect(granted.scope).toBe('openid read:reports');
    expect(decodeJwt(granted.access_token).roles).toEqual(['admin', 'analyst']);

    // The upstream drops the groups: the next sign-in takes the roles back.
    idp.behaviour.person = { ...idp.behaviour.person, groups: ['staff'] };
    const again = await signInThroughAcme();
    expect(again.id).toBe(pat.id);
    expect(again.roles).toEqual([]);
    const after = await tokensFor(t, again, 'cli', { scope: 'openid read:reports', audience: reports });
    expect(after.scope).toBe('openid');
    expect(decodeJwt(after.access_token).roles).toBeUndefined();

    await t.app.services.auditTrail.flush();
    const events = async (event: string) => (await t.store.listAuditEvents({ event, limit: 10 })).map((e) => e.details);
    expect(await events('upstream.group_roles_granted')).toEqual([expect.objectContaining({ connectorId: 'acme', roles: ['admin', 'analyst'] })]);
    expect(await events('upstream.group_roles_revoked')).toEqual([expect.objectContaining({ connectorId: 'acme', roles: ['admin', 'analyst'] })]);
  });

  it('group names match exactly: another case or a longer name grants nothing; a direct grant of the role survives losing the group', async () => {
    await t.store.createRole({ name: 'ops', description: undefined, permissions: [], groups: ['admins'], createdAt: 1_800_000_000 });
    idp.behaviour.person = { ...idp.behaviour.person, groups: ['Admins', 'admins-extra', 'admin'] };
    const pat = await signInThroughAcme();
    expect(pat.roles).toEqual([]);

    idp.behaviour.person = { ...idp.behaviour.person, groups: ['admins'] };
    expect((await signInThroughAcme()).roles).toEqual(['ops']);
    await t.store.grantRole(pat.id, 'ops', 1_800_000_000);
    idp.behaviour.person = { ...idp.behaviour.person, groups: [] };
    expect((await signInThroughAcme()).roles).toEqual(['ops']);
    expect(await t.store.listUserRoleSources(pat.id)).toEqual({ direct: ['ops'], group: [] });
  });
});

describe('upstream attacks and failures end on a page, with nothing created', () => {
  async function expectRefused(answer: BrowserResponse, status = 400) {
    expect(answer.status).toBe(status);
    expect(answer.headers['content-type']).toMatch(/^text\/html/);
    expect(answer.body).toContain('Signing in with');
    expect(answer.location).toBeUndefined();
    expect(usersCount()).toBe(1);
    expect(identitiesCount()).toBe(0);
    expect((await browser.get('/login')).status).toBe(200); // not signed in
  }

  it('a forged state', async () => {
    const start = await startWith('acme');
    const upstream = await fetch(upstreamUrl(start), { redirect: 'manual' });
    const callback = new URL(upstream.headers.get('location')!);
    callback.searchParams.set('state', 'forged-state-value-forged-state-value');
    await expectRefused(await browser.get(callback.pathname + callback.search));
  });

  it('a replayed callback (the state is used once)', async () => {
    const { callback, answer } = await throughUpstream(await startWith('acme'));
    expect(answer.status).toBe(303);
    await browser.post('/logout', {});
    const replay = await browser.get(callback.pathname + callback.search);
    expect(replay.status).toBe(400);
    expect(usersCount()).toBe(2);
  });

  it('a callback in another browser than the one that started', async () => {
    const start = await startWith('acme');
    const upstream = await fetch(upstreamUrl(start), { redirect: 'manual' });
    const callback = new URL(upstream.headers.get('location')!);
    browser = new Browser(injectTransport(t.app));
    await expectRefused(await browser.get(callback.pathname + callback.search));
  });

  it('an id_token with another nonce', async () => {
    idp.behaviour.idTokenOverrides = { nonce: 'not-the-nonce-we-sent' };
    await expectRefused((await throughUpstream(await startWith('acme'))).answer);
  });

  it('an id_token from another issuer', async () => {
    idp.behaviour.idTokenOverrides = { iss: 'https://evil.example' };
    await expectRefused((await throughUpstream(await startWith('acme'))).answer);
  });

  it('an id_token for another audience', async () => {
    idp.behaviour.idTokenOverrides = { aud: 'someone-else' };
    await expectRefused((await throughUpstream(await startWith('acme'))).answer);
  });

  it('an expired id_token', async () => {
    idp.behaviour.idTokenOverrides = { exp: Math.floor(Date.now() / 1000) - 600 };
    await expectRefused((await throughUpstream(await startWith('acme'))).answer);
  });

  it('a response claiming to come from another issuer (mix-up, RFC 9207), or none where one is promised', async () => {
    idp.behaviour.responseIss = 'https://evil.example';
    await expectRefused((await throughUpstream(await startWith('acme'))).answer);
    idp.behaviour.responseIss = null;
    await expectRefused((await throughUpstream(await startWith('acme'))).answer);
  });

  it('the person denies at the upstream', async () => {
    idp.behaviour.authorizeError = 'access_denied';
    const { answer } = await throughUpstream(await startWith('acme'));
    await expectRefused(answer);
    expect(answer.body).toContain('cancelled');
  });

  it('a dead upstream: the sign-in page gives up within the configured time (502)', async () => {
    idp.behaviour.hang.add('/.well-known/openid-configuration');
    const started = Date.now();
    const start = await startWith('acme');
    expect(Date.now() - started).toBeLessThan(5000);
    expect(start.status).toBe(502);
    expect(start.body).toContain('could not be reached');
  });

  it('a token endpoint that never answers: 502 within the configured time', async () => {
    idp.behaviour.hang.add('/token');
    const start = await startWith('acme');
    const started = Date.now();
    const { answer } = await throughUpstream(start);
    expect(Date.now() - started).toBeLessThan(5000);
    await expectRefused(answer, 502);
    expect(answer.body).toContain('Signing in with Acme SSO did not work');
    expect(answer.body).toContain('did not answer');
  });

  it('an id_token signed with a key the upstream does not publish (same kid)', async () => {
    idp.behaviour.signWithUnpublishedKey = true;
    const { answer } = await throughUpstream(await startWith('acme'));
    await expectRefused(answer);
    const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/latchkey_upstream_signins_total\{connector="acme",outcome="invalid_response"\} 1/);
  });

  it('the failure page leads back to the sign-in of the same request', async () => {
    idp.behaviour.authorizeError = 'access_denied';
    const confirm = '/activate/confirm?user_code=BCDF-GHJK';
    const { answer } = await throughUpstream(await startWith('acme', confirm));
    expect(answer.body).toContain(`href="/login?return_to=${encodeURIComponent(confirm).replace(/&/g, '&amp;')}"`);
  });

  it('an upstream on a closed port', async () => {
    const silent = await startSilentServer();
    await silent.close();
    await addConnector('gone', 'oidc', { issuer: silent.base, clientId: 'x' }, undefined, 'Gone');
    const start = await startWith('gone');
    expect(start.status).toBe(502);
  });
});

describe('a connector set up wrong: people are told so, and the log says why at warn', () => {
  let lines: string[];
  beforeEach(async () => {
    await t.close();
    lines = [];
    t = await testApp({ LATCHKEY_UPSTREAM_TIMEOUT: '1' }, { logLines: lines });
    browser = new Browser(injectTransport(t.app));
  });
  const failureLine = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((l) => l.event === 'upstream.signin_failure');
  const reference = (body: string) => body.match(/This sign-in method is not set up correctly; tell your administrator \(reference ([^)]+)\)\./)?.[1];

  it('an issuer named otherwise than the upstream names itself: not set up correctly, and the log names the issuer it really has', async () => {
    idp.behaviour.discoveryIssuer = 'http://localhost:9';
    try {
      await addConnector('acme', 'oidc', { issuer: idp.base, clientId: idp.clientId }, idp.clientSecret, 'Acme SSO');
      const start = await startWith('acme');
      expect(start.status).toBe(502);
      expect(start.body).not.toContain('Try again in a moment');
      const ref = reference(start.body);
      expect(ref).toBeDefined();
      expect(failureLine()).toMatchObject({
        level: 40,
        reqId: ref,
        reference: ref,
        reason: 'misconfigured',
        detail: `the issuer's discovery document names the issuer http://localhost:9, not ${idp.base}: set the connector's issuer to http://localhost:9`,
      });
    } finally {
      idp.behaviour.discoveryIssuer = undefined;
    }
  });

  it('a client secret the upstream refuses (invalid_client): not set up correctly, and the log says so at warn', async () => {
    await addConnector('acme', 'oidc', { issuer: idp.base, clientId: idp.clientId }, 'not-the-secret', 'Acme SSO');
    const { answer } = await throughUpstream(await startWith('acme'));
    expect(answer.status).toBe(502);
    expect(reference(answer.body)).toBeDefined();
    expect(failureLine()).toMatchObject({
      level: 40,
      reason: 'misconfigured',
      detail: `the token endpoint refused the client ${idp.clientId} (invalid_client): check the connector's client id and secret`,
    });
    expect(lines.join('\n')).not.toContain('not-the-secret');
    expect(usersCount()).toBe(1); // the bootstrap admin only
  });

  it('a GitHub client secret GitHub refuses (incorrect_client_credentials): not set up correctly', async () => {
    await addConnector('gh', 'github', { clientId: github.clientId, apiUrl: github.apiUrl }, 'not-the-secret', 'GitHub');
    const { answer } = await throughUpstream(await startWith('gh'));
    expect(answer.status).toBe(502);
    expect(reference(answer.body)).toBeDefined();
    expect(failureLine()).toMatchObject({ level: 40, reason: 'misconfigured', detail: expect.stringContaining('(incorrect_client_credentials)') });
  });

  it('a dead upstream is still "try again in a moment", logged at warn; a cancelled sign-in is logged at info', async () => {
    const silent = await startSilentServer();
    await silent.close();
    await addConnector('gone', 'oidc', { issuer: silent.base, clientId: 'x' }, undefined, 'Gone');
    const start = await startWith('gone');
    expect(start.status).toBe(502);
    expect(start.body).toContain('could not be reached. Try again in a moment.');
    expect(failureLine()).toMatchObject({ level: 40, reason: 'unreachable', detail: `cannot connect to ${silent.base}: connection refused` });
    lines.length = 0;
    await addConnector('acme', 'oidc', { issuer: idp.base, clientId: idp.clientId }, idp.clientSecret, 'Acme SSO');
    idp.behaviour.authorizeError = 'access_denied';
    await throughUpstream(await startWith('acme'));
    expect(failureLine()).toMatchObject({ level: 30, reason: 'denied' });
  });
});

describe('accounts: a stable sub, and linking only by a verified email the connector trusts', () => {
  it("an upstream claiming an admin's email, unverified, gets a user of its own even with --trust-email", async () => {
    await addConnector('trusting', 'oidc', { issuer: idp.base, clientId: idp.clientId, trustEmail: true }, idp.clientSecret, 'Trusting');
    const admin = await addUser(t.store, 'boss', 'boss-password', { email: 'boss@example.com' });
    idp.behaviour.person = { sub: 'attacker-1', email: 'boss@example.com', email_verified: false, preferred_username: 'boss' };
    await throughUpstream(await startWith('trusting'));
    const identity = await t.store.findIdentity('trusting', 'attacker-1');
    expect(identity!.userId).not.toBe(admin.id);
    const created = await t.store.findUserById(identity!.userId);
    expect(created).toMatchObject({ source: 'trusting', username: 'boss@trusting', emailVerified: false });
  });

  it('without --trust-email a verified email links to nobody', async () => {
    const local = await addUser(t.store, 'carol', 'carol-password', { email: 'Pat@Upstream.Example' });
    await throughUpstream(await startWith('acme')); // acme does not trust emails
    expect((await t.store.findIdentity('acme', 'upstream-sub-1'))!.userId).not.toBe(local.id);
  });

  it('with --trust-email a verified email links to the one local user with it (case aside)', async () => {
    const local = await addUser(t.store, 'carol', 'carol-password', { email: 'Pat@Upstream.Example' });
    await addConnector('trusting', 'oidc', { issuer: idp.base, clientId: idp.clientId, trustEmail: true, groupsClaim: 'groups' }, idp.clientSecret, 'Trusting');
    await throughUpstream(await startWith('trusting'));
    expect((await t.store.findIdentity('trusting', 'upstream-sub-1'))!.userId).toBe(local.id);
    // The local user keeps its own profile (not the upstream's) but gets the groups.
    expect(await t.store.findUserById(local.id)).toMatchObject({
      username: 'carol',
      email: 'Pat@Upstream.Example',
      source: 'local',
      groups: ['staff', 'admins'],
    });
    expect(usersCount()).toBe(2);
  });

  it('with --trust-email but two local users of that email, it links to neither', async () => {
    await addUser(t.store, 'carol', 'carol-password', { email: 'pat@upstream.example' });
    await addUser(t.store, 'carol2', 'carol-password', { email: 'pat@upstream.example' });
    await addConnector('trusting', 'oidc', { issuer: idp.base, clientId: idp.clientId, trustEmail: true }, idp.clientSecret, 'Trusting');
    await throughUpstream(await startWith('trusting'));
    expect((await t.store.findUserById((await t.store.findIdentity('trusting', 'upstream-sub-1'))!.userId))!.source).toBe('trusting');
  });

  it('a disabled user cannot sign in through an upstream either', async () => {
    await throughUpstream(await startWith('acme'));
    await t.store.setUserDisabled('pat', true, Math.floor(t.clock()));
    await browser.post('/logout', {});
    const { answer } = await throughUpstream(await startWith('acme'));
    expect(answer.status).toBe(403);
    expect(answer.body).toContain('disabled');
  });

  it('with --trust-email, a disabled local account of that email is refused, not replaced by a fresh one', async () => {
    await addUser(t.store, 'carol', 'carol-password', { email: 'pat@upstream.example' });
    await t.store.setUserDisabled('carol', true, Math.floor(t.clock()));
    await addConnector('trusting', 'oidc', { issuer: idp.base, clientId: idp.clientId, trustEmail: true }, idp.clientSecret, 'Trusting');
    const { answer } = await throughUpstream(await startWith('trusting'));
    expect(answer.status).toBe(403);
    expect(answer.body).toContain('disabled');
    expect(usersCount()).toBe(2);
    expect(identitiesCount()).toBe(0);
  });

  it('with --trust-email, a verified email links only to a local account: not to a user another upstream made', async () => {
    await throughUpstream(await startWith('gh')); // octo@example.com, verified at GitHub
    await browser.post('/logout', {});
    await addConnector('trusting', 'oidc', { issuer: idp.base, clientId: idp.clientId, trustEmail: true }, idp.clientSecret, 'Trusting');
    idp.behaviour.person = { sub: 'someone-else', email: 'octo@example.com', email_verified: true, preferred_username: 'octo' };
    await throughUpstream(await startWith('trusting'));
    const githubUser = (await t.store.findIdentity('gh', '4242'))!.userId;
    expect((await t.store.findIdentity('trusting', 'someone-else'))!.userId).not.toBe(githubUser);
  });

  it("with --trust-email, the first administrator's made-up address (admin@localhost) links to nobody", async () => {
    const admin = (await t.store.listUsers())[0]!;
    expect(admin).toMatchObject({ email: 'admin@localhost', emailVerified: false });
    await addConnector('trusting', 'oidc', { issuer: idp.base, clientId: idp.clientId, trustEmail: true }, idp.clientSecret, 'Trusting');
    idp.behaviour.person = { sub: 'intruder', email: 'admin@localhost', email_verified: true, preferred_username: 'admin' };
    await throughUpstream(await startWith('trusting'));
    expect((await t.store.findIdentity('trusting', 'intruder'))!.userId).not.toBe(admin.id);
  });

  it('without --trust-email, the users an OIDC upstream creates do not carry its email_verified', async () => {
    await throughUpstream(await startWith('acme'));
    const user = await t.store.findUserByUsername('pat');
    expect(user).toMatchObject({ email: 'pat@upstream.example', emailVerified: false });
  });

  it('a user made by an upstream has no password: the password form refuses every password for it', async () => {
    await throughUpstream(await startWith('acme'));
    await browser.post('/logout', {});
    const login = await browser.get('/login');
    for (const password of ['upstream', '', 'x']) {
      const res = await browser.post('/login', { csrf_token: inputValue(login.body, 'csrf_token')!, username: 'pat', password });
      expect([400, 401]).toContain(res.status);
      expect(res.location).toBeUndefined();
    }
  });

  it('a connector removed and added again under the same id does not hand the old identities on', async () => {
    await throughUpstream(await startWith('acme'));
    const first = (await t.store.findIdentity('acme', 'upstream-sub-1'))!.userId;
    await browser.post('/logout', {});
    expect(await t.store.removeConnector('acme')).toBe(true);
    expect(await t.store.findIdentity('acme', 'upstream-sub-1')).toBeUndefined();
    await addConnector('acme', 'oidc', { issuer: idp.base, clientId: idp.clientId }, idp.clientSecret, 'Acme SSO');
    forgetDiscovery();
    await throughUpstream(await startWith('acme'));
    const second = (await t.store.findIdentity('acme', 'upstream-sub-1'))!.userId;
    expect(second).not.toBe(first);
  });

  it('the same upstream name at two connectors: two users, never the same one', async () => {
    await addConnector('acme2', 'oidc', { issuer: idp.base, clientId: idp.clientId }, idp.clientSecret, 'Acme 2');
    await throughUpstream(await startWith('acme'));
    await browser.post('/logout', {});
    await throughUpstream(await startWith('acme2'));
    const a = await t.store.findIdentity('acme', 'upstream-sub-1');
    const b = await t.store.findIdentity('acme2', 'upstream-sub-1');
    expect(a!.userId).not.toBe(b!.userId);
    expect((await t.store.findUserById(b!.userId))!.username).toBe('pat@acme2');
  });
});

describe('a GitHub upstream', () => {
  it('signs a member of an allowed organization in, with the primary verified email and org:team groups', async () => {
    const start = await startWith('gh');
    const url = new URL(upstreamUrl(start));
    expect(url.origin + url.pathname).toBe(`${github.base}/login/oauth/authorize`);
    expect(url.searchParams.get('scope')).toBe('read:user user:email read:org');
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    const { answer } = await throughUpstream(start);
    expect(answer.status).toBe(303);
    const identity = await t.store.findIdentity('gh', '4242');
    expect(await t.store.findUserById(identity!.userId)).toMatchObject({
      username: 'octo-cat',
      email: 'octo@example.com',
      emailVerified: true,
      name: 'Octo Cat',
      groups: ['acme:platform'],
      source: 'gh',
    });
  });

  it('someone in none of the organizations is turned away', async () => {
    github.account.orgs = ['other-org'];
    const { answer } = await throughUpstream(await startWith('gh'));
    expect(answer.status).toBe(403);
    expect(answer.body).toContain('not a member of an organization allowed');
    expect(usersCount()).toBe(1);
  });

  it('a GitHub API that never answers: 502 within the configured time, nothing created', async () => {
    github.hang.add('/api/v3/user/teams');
    const start = await startWith('gh');
    const started = Date.now();
    const { answer } = await throughUpstream(start);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(answer.status).toBe(502);
    expect(usersCount()).toBe(1);
  });

  it('a GitHub API answering without end is cut off at 1 MB (not waited out), nothing created', async () => {
    github.flood.add('/api/v3/user');
    const start = await startWith('gh');
    const started = Date.now();
    const { answer } = await throughUpstream(start);
    expect(Date.now() - started).toBeLessThan(900); // sooner than LATCHKEY_UPSTREAM_TIMEOUT=1
    expect(answer.status).toBe(400); // a wrong answer, not a missing one
    expect(answer.body).toContain('Signing in with GitHub did not work');
    expect(usersCount()).toBe(1);
  });

  it('Cancel at GitHub', async () => {
    github.authorizeError = 'access_denied';
    const { answer } = await throughUpstream(await startWith('gh'));
    expect(answer.status).toBe(400);
    expect(answer.body).toContain('cancelled at GitHub');
  });
});

describe("what an upstream says of a person is checked as `users add` checks an administrator's input", () => {
  const escapes = '\x1b[2J\x1b[HPat\x1b]0;pwned\x07';

  it('OIDC (--trust-email): a name with terminal escapes, an email with CR LF and a group with a C1 control are left out; a verified email is not asserted', async () => {
    await addConnector('trusting', 'oidc', { issuer: idp.base, clientId: idp.clientId, trustEmail: true, groupsClaim: 'groups' }, idp.clientSecret, 'Trusting');
    idp.behaviour.person = {
      sub: 'hostile-1',
      email: 'pat@upstream.example\r\nBcc: everyone@example.com',
      email_verified: true,
      name: escapes,
      preferred_username: 'pat',
      groups: ['staff', 'ops\u009b2J'],
    };
    const { answer } = await throughUpstream(await startWith('trusting'));
    expect(answer.status).toBe(303);
    const user = await t.store.findUserById((await t.store.findIdentity('trusting', 'hostile-1'))!.userId);
    expect(user).toMatchObject({ username: 'pat', email: '', emailVerified: false, name: undefined, groups: ['staff'] });
    await t.app.services.auditTrail.flush();
    const [refused] = await t.store.listAuditEvents({ event: 'upstream.attributes_refused', limit: 10 });
    expect(refused).toMatchObject({ userId: user!.id, details: { connectorId: 'trusting', attributes: ['email', 'name'] } });
  });

  it('OIDC: an email the upstream later sends broken is no longer asserted as verified; a good one again is taken', async () => {
    await addConnector('trusting', 'oidc', { issuer: idp.base, clientId: idp.clientId, trustEmail: true }, idp.clientSecret, 'Trusting');
    idp.behaviour.person = { sub: 'changing-1', email: 'pat@upstream.example', email_verified: true, name: 'Pat', preferred_username: 'pat' };
    await throughUpstream(await startWith('trusting'));
    const userId = (await t.store.findIdentity('trusting', 'changing-1'))!.userId;
    expect(await t.store.findUserById(userId)).toMatchObject({ email: 'pat@upstream.example', emailVerified: true });
    await browser.post('/logout', {});
    idp.behaviour.person = { ...idp.behaviour.person, email: 'pat@upstream.example\u0085\u001b[31m' };
    await throughUpstream(await startWith('trusting'));
    expect(await t.store.findUserById(userId)).toMatchObject({ email: '', emailVerified: false, name: 'Pat' });
    await browser.post('/logout', {});
    idp.behaviour.person = { ...idp.behaviour.person, email: 'pat@upstream.example' };
    await throughUpstream(await startWith('trusting'));
    expect(await t.store.findUserById(userId)).toMatchObject({ email: 'pat@upstream.example', emailVerified: true });
  });

  it('OIDC: a subject with control characters refuses the sign-in (it names the identity for good), nothing created', async () => {
    idp.behaviour.person = { sub: 'sub\r\nforged', email: 'pat@upstream.example', email_verified: true, preferred_username: 'pat' };
    const { answer } = await throughUpstream(await startWith('acme'));
    expect(answer.status).toBe(400);
    expect(answer.body).toContain('did not say who you are');
    expect(usersCount()).toBe(1);
    expect(identitiesCount()).toBe(0);
  });

  it('GitHub: a profile name with terminal escapes and a primary email with CR LF are left out', async () => {
    const saved = { name: github.account.name, emails: github.account.emails };
    github.account.name = escapes;
    github.account.emails = [{ email: 'octo@example.com\r\nX-Injected: yes', primary: true, verified: true }];
    try {
      const { answer } = await throughUpstream(await startWith('gh'));
      expect(answer.status).toBe(303);
      const user = await t.store.findUserById((await t.store.findIdentity('gh', '4242'))!.userId);
      expect(user).toMatchObject({ username: 'octo-cat', email: '', emailVerified: false, name: undefined });
    } finally {
      Object.assign(github.account, saved);
    }
  });
});

describe('the device flow through a connector', () => {
  it('/activate → sign in with the upstream → back to confirm the device', async () => {
    const device = (await t.app.inject({ method: 'POST', url: '/oauth/device/code', ...form({ client_id: 'latchkey-cli' }) })).json();
    const confirm = `/activate/confirm?user_code=${device.user_code}`;
    const toLogin = await browser.get(confirm);
    expect(toLogin.location).toMatch(/^\/login\?return_to=/);
    const { answer } = await throughUpstream(await startWith('acme', confirm));
    expect(answer.location).toBe(confirm);
    const page = await browser.get(confirm);
    expect(page.status).toBe(200);
    expect(page.body).toContain('name="decision"');
  });
});

describe('a fresh sign-in asked by a client (prompt=login, max_age) is asked upstream too', () => {
  async function authorizeReturnTo(extra: Record<string, string>): Promise<string> {
    await addClient(t.store, 'web', { redirectUris: ['https://app.example.com/cb'], grantTypes: ['authorization_code'], firstParty: true });
    const { challenge } = pkcePair();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: 'web',
      redirect_uri: 'https://app.example.com/cb',
      scope: 'openid',
      state: 's1',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...extra,
    });
    const toLogin = await browser.get(`/authorize?${query}`);
    return decodeURIComponent(toLogin.location!.split('return_to=')[1]!.split('&')[0]!);
  }

  it('prompt=login: the upstream is asked for prompt=login, and an old upstream sign-in (auth_time) is refused', async () => {
    const returnTo = await authorizeReturnTo({ prompt: 'login' });
    const start = await startWith('acme', returnTo);
    expect(new URL(upstreamUrl(start)).searchParams.get('prompt')).toBe('login');
    // max_age=0 too: the same request, which obliges the provider to send auth_time.
    expect(new URL(upstreamUrl(start)).searchParams.get('max_age')).toBe('0');
    // (This server runs on the test clock; the upstream's auth_time is judged against it.)
    idp.behaviour.authTime = Math.floor(t.clock()) - 3600;
    const { answer } = await throughUpstream(start);
    expect(answer.status).toBe(400);
    expect(answer.body).toContain('did not ask you to sign in again');
    expect(usersCount()).toBe(1);

    idp.behaviour.authTime = Math.floor(t.clock()); // the upstream asked again: auth_time is now
    const ok = await throughUpstream(await startWith('acme', returnTo));
    expect(ok.answer.location).toBe(returnTo);
  });

  it('prompt=login: an upstream that does not say when the person signed in (no auth_time) is refused', async () => {
    const returnTo = await authorizeReturnTo({ prompt: 'login' });
    idp.behaviour.idTokenOmits = ['auth_time'];
    const { answer } = await throughUpstream(await startWith('acme', returnTo));
    expect(answer.status).toBe(400);
    expect(usersCount()).toBe(1);
  });

  it('max_age: passed on as is; an upstream sign-in older than it is refused, a recent one is taken', async () => {
    const returnTo = await authorizeReturnTo({ max_age: '300' });
    const start = await startWith('acme', returnTo);
    const url = new URL(upstreamUrl(start));
    expect(url.searchParams.get('max_age')).toBe('300');
    expect(url.searchParams.get('prompt')).toBeNull();
    idp.behaviour.authTime = Math.floor(t.clock()) - 3600;
    expect((await throughUpstream(start)).answer.status).toBe(400);

    idp.behaviour.authTime = Math.floor(t.clock()) - 200; // within max_age
    const ok = await throughUpstream(await startWith('acme', returnTo));
    expect(ok.answer.location).toBe(returnTo);
    const done = await browser.get(returnTo);
    expect(new URL(done.location!).searchParams.get('code')).toBeTruthy();
  });

  it("the session carries the upstream's auth_time: a client's max_age measures the real sign-in, not the return from an old upstream session", async () => {
    await addClient(t.store, 'web', { redirectUris: ['https://app.example.com/cb'], grantTypes: ['authorization_code'], firstParty: true });
    idp.behaviour.authTime = Math.floor(t.clock()) - 1000;
    await throughUpstream(await startWith('acme'));
    const { verifier, challenge } = pkcePair();
    const authorize = (extra: Record<string, string>) =>
      browser.get(
        `/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'web', redirect_uri: 'https://app.example.com/cb', scope: 'openid', state: 's1', code_challenge: challenge, code_challenge_method: 'S256', ...extra })}`,
      );
    // Signed in here just now, but at the upstream 1000 s ago: max_age=300 asks again…
    expect((await authorize({ max_age: '300' })).location).toMatch(/^\/login\?return_to=.*&fresh=1$/);
    // …and without max_age the code's id_token says when the person really signed in.
    const code = new URL((await authorize({})).location!).searchParams.get('code')!;
    const tokens = (
      await t.app.inject({
        method: 'POST',
        url: '/oauth/token',
        ...form({ grant_type: 'authorization_code', client_id: 'web', code, redirect_uri: 'https://app.example.com/cb', code_verifier: verifier }),
      })
    ).json();
    expect(decodeJwt(tokens.id_token).auth_time).toBe(Math.floor(t.clock()) - 1000);
  });

  it('GitHub cannot confirm a fresh sign-in: its button is not offered then, and pressing it anyway is refused', async () => {
    const returnTo = await authorizeReturnTo({ prompt: 'login' });
    const login = await browser.get(`/login?return_to=${encodeURIComponent(returnTo)}`);
    expect(login.body).toContain('value="acme"');
    expect(login.body).not.toContain('value="gh"');
    const res = await browser.post('/login/connector', { csrf_token: inputValue(login.body, 'csrf_token')!, return_to: returnTo, connector: 'gh' });
    expect(res.status).toBe(400);
    expect(res.body).toContain('fresh sign-in');
    // Without such a request, GitHub is offered.
    expect((await browser.get('/login')).body).toContain('value="gh"');
  });
});

describe('the token endpoint of an OIDC upstream', () => {
  it('is called with client_secret_basic (RFC 6749 §2.3.1)', async () => {
    await throughUpstream(await startWith('acme'));
    expect(idp.lastTokenAuth).toBe('client_secret_basic');
  });
});
