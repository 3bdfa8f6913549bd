/**
 * Passkeys through the routes, with a software authenticator that answers the options
 * the server hands out the way a browser would (test/helpers/soft_authenticator.ts): registration
 * on /account/security, the sign-in with a passkey alone (username-less), a passkey as the second
 * step, renaming and removing, and the ways an attacker would bend a ceremony. The same flows in
 * Chromium with a virtual authenticator: test/e2e/passkeys.e2e.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { addClient, addUser, form, pkcePair, testApp, type TestApp } from '../helpers/app.js';
import { Browser, inputValue, injectTransport, signIn, type BrowserResponse } from '../helpers/browser.js';
import { enrollTotp, shownRecoveryCodes, usePasskeyForm } from '../helpers/mfa.js';
import { SoftAuthenticator } from '../helpers/soft_authenticator.js';

const issuer = 'http://localhost:8080';
let t: TestApp;
afterEach(() => t.close());

const logLines: string[] = [];
async function setUp(env: Record<string, string> = {}) {
  logLines.length = 0;
  t = await testApp({ LATCHKEY_ISSUER: issuer, ...env }, { logLines });
  await addUser(t.store, 'alice', 'alice-password');
  await addUser(t.store, 'bob', 'bob-password');
  await addClient(t.store, 'web', { redirectUris: ['https://app.example.com/cb'], grantTypes: ['authorization_code'], firstParty: true });
  return new Browser(injectTransport(t.app));
}

const signInAs = async (browser: Browser, who = 'alice', returnTo = '/activate') =>
  signIn(browser, await browser.get(`/login?return_to=${encodeURIComponent(returnTo)}`), who, `${who}-password`);
const signedIn = async (browser: Browser) => (await browser.get('/login')).status === 303;

/** Registers a passkey from /account/security with the authenticator; returns the page that follows. */
async function registerPasskey(browser: Browser, authenticator: SoftAuthenticator, name = 'Laptop', bend: Parameters<SoftAuthenticator['register']>[1] = {}) {
  const overview = await browser.get('/account/security');
  expect(overview.status).toBe(200);
  return usePasskeyForm(browser, overview, '/account/security/passkeys', (options) => authenticator.register(options as never, bend), { name });
}

/** Alice with a passkey on `authenticator`, signed out again. */
async function aliceWithPasskey(browser: Browser, authenticator = new SoftAuthenticator(issuer)) {
  expect((await signInAs(browser)).status).toBe(303);
  const registered = await registerPasskey(browser, authenticator);
  expect(registered.status, registered.body).toBe(200); // the recovery codes, as for the first factor of any kind
  await browser.post('/logout', {});
  return authenticator;
}

function authorizeUrl() {
  const { verifier, challenge } = pkcePair();
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: 'web',
    redirect_uri: 'https://app.example.com/cb',
    scope: 'openid',
    state: 's1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
  return { url: `/authorize?${query}`, verifier };
}

async function idTokenOf(location: string, verifier: string) {
  const code = new URL(location).searchParams.get('code')!;
  const res = await t.app.inject({
    method: 'POST',
    url: '/oauth/token',
    ...form({ grant_type: 'authorization_code', client_id: 'web', code, redirect_uri: 'https://app.example.com/cb', code_verifier: verifier }),
  });
  expect(res.statusCode, res.body).toBe(200);
  return decodeJwt(res.json<{ id_token: string }>().id_token);
}

/** The sign-in page an /authorize request leads to. */
async function loginPageFor(browser: Browser, url: string): Promise<BrowserResponse> {
  const login = await browser.follow(await browser.get(url));
  expect(login.body).toContain('action="/login/passkey"');
  return login;
}

describe('registering a passkey', () => {
  it('is stored with its public key and name, listed, and the first factor brings recovery codes', async () => {
    const browser = await setUp();
    await signInAs(browser);
    const authenticator = new SoftAuthenticator(issuer);
    const page = await registerPasskey(browser, authenticator, 'Work laptop');
    expect(page.status, page.body).toBe(200);
    expect(shownRecoveryCodes(page.body)).toHaveLength(10);
    const alice = (await t.store.findUserByUsername('alice'))!;
    const [passkey] = await t.store.listPasskeys(alice.id);
    expect(passkey).toMatchObject({
      id: authenticator.credentials[0]!.id.toString('base64url'),
      userId: alice.id,
      name: 'Work laptop',
      counter: 0,
      transports: ['internal'],
    });
    expect(passkey!.publicKey.length).toBeGreaterThan(40);
    const overview = await browser.get('/account/security');
    expect(overview.body).toContain('Work laptop');
    // The options ask for a discoverable credential with user verification, and exclude the passkey it holds.
    const options = JSON.parse((await browser.post('/account/security/passkeys/options', { csrf_token: inputValue(overview.body, 'csrf_token')! })).body);
    expect(options.rp).toEqual({ id: 'localhost', name: 'Latchkey' });
    expect(options.authenticatorSelection).toMatchObject({ residentKey: 'required', userVerification: 'required' });
    expect(options.excludeCredentials.map((c: { id: string }) => c.id)).toEqual([passkey!.id]);
  });

  it('refuses an answer from another origin, without user verification, for another challenge, or twice', async () => {
    const browser = await setUp();
    await signInAs(browser);
    const authenticator = new SoftAuthenticator(issuer);
    expect((await registerPasskey(browser, authenticator, 'x', { origin: 'https://evil.example' })).status).toBe(400);
    expect((await registerPasskey(browser, authenticator, 'x', { noUserVerification: true })).status).toBe(400);
    // An answer made for one challenge, posted after a second set of options replaced it.
    const overview = await browser.get('/account/security');
    const csrf = inputValue(overview.body, 'csrf_token')!;
    const first = JSON.parse((await browser.post('/account/security/passkeys/options', { csrf_token: csrf })).body);
    await browser.post('/account/security/passkeys/options', { csrf_token: csrf });
    const stale = await browser.post('/account/security/passkeys', { csrf_token: csrf, credential: JSON.stringify(authenticator.register(first)) });
    expect(stale.status).toBe(400);
    // A good answer, then the same answer again: the challenge was used up.
    const options = JSON.parse((await browser.post('/account/security/passkeys/options', { csrf_token: csrf })).body);
    const answer = JSON.stringify(authenticator.register(options));
    expect((await browser.post('/account/security/passkeys', { csrf_token: csrf, credential: answer })).status).toBe(200);
    // (The session was upgraded by the new factor, and with it the form token.)
    const fresh = inputValue((await browser.get('/account/security')).body, 'csrf_token')!;
    expect((await browser.post('/account/security/passkeys', { csrf_token: csrf, credential: answer })).status).toBe(403);
    expect((await browser.post('/account/security/passkeys', { csrf_token: fresh, credential: answer })).status).toBe(400);
    const alice = (await t.store.findUserByUsername('alice'))!;
    expect(await t.store.listPasskeys(alice.id)).toHaveLength(1);
  });

  it('options need a session and the form token; answers that are not JSON, or huge, are a 4xx, never a 500', async () => {
    const browser = await setUp();
    const anonymous = await browser.post('/account/security/passkeys/options', { csrf_token: 'x' });
    expect(anonymous.status).toBe(403);
    expect(JSON.parse(anonymous.body).error).toBe('invalid_request');
    await signInAs(browser);
    const noToken = await browser.post('/account/security/passkeys/options', {});
    expect(noToken.status).toBe(403);
    expect((await browser.post('/account/security/passkeys/options', { csrf_token: 'forged' })).status).toBe(403);
    const overview = await browser.get('/account/security');
    const csrf = inputValue(overview.body, 'csrf_token')!;
    await browser.post('/account/security/passkeys/options', { csrf_token: csrf });
    for (const credential of [
      '',
      'not json',
      '{}',
      '[]',
      'null',
      JSON.stringify({ id: 'AA', rawId: 'AA', type: 'public-key', response: { clientDataJSON: 'AA', attestationObject: '!!' } }),
      'x'.repeat(200_000),
    ]) {
      const res = await browser.post('/account/security/passkeys', { csrf_token: csrf, credential });
      expect(res.status, credential.slice(0, 40)).toBeGreaterThanOrEqual(400);
      expect(res.status, credential.slice(0, 40)).toBeLessThan(500);
    }
    // Nothing was stored, and the page still works.
    expect(await t.store.listPasskeys((await t.store.findUserByUsername('alice'))!.id)).toHaveLength(0);
    expect((await browser.get('/account/security')).status).toBe(200);
  });

  it('names: 1-64 printable characters; control characters are refused; the default names the date', async () => {
    const browser = await setUp();
    await signInAs(browser);
    const authenticator = new SoftAuthenticator(issuer);
    expect((await registerPasskey(browser, authenticator, 'bad\u0007name')).status).toBe(400);
    expect((await registerPasskey(browser, authenticator, 'x'.repeat(65))).status).toBe(400);
    expect((await registerPasskey(browser, authenticator, '')).status).toBe(200);
    const [passkey] = await t.store.listPasskeys((await t.store.findUserByUsername('alice'))!.id);
    expect(passkey!.name).toMatch(/^Passkey added \d{4}-\d{2}-\d{2}$/);
  });

  it('are not offered on a plain-http issuer other than localhost, nor under LATCHKEY_MFA=off', async () => {
    for (const env of [{ LATCHKEY_ISSUER: 'http://latchkey.test' }, { LATCHKEY_MFA: 'off' }] as Array<Record<string, string>>) {
      const browser = await setUp(env);
      const login = await browser.get('/login?return_to=%2Factivate');
      expect(login.body).not.toContain('action="/login/passkey"');
      expect(login.headers['content-security-policy']).not.toContain('script-src');
      const options = await browser.post('/login/passkey/options', { csrf_token: inputValue(login.body, 'csrf_token')! });
      expect(options.status).toBe(400);
      await t.close();
    }
    t = await testApp({}); // for afterEach
  });
});

describe('signing in with a passkey alone', () => {
  it('username-less: an Authorization Code flow whose id_token says amr hwk+user and acr urn:latchkey:mfa', async () => {
    const browser = await setUp();
    const authenticator = await aliceWithPasskey(browser);
    const { url, verifier } = authorizeUrl();
    const login = await loginPageFor(browser, url);
    // The login page runs only this server's scripts, and only because of the passkey button.
    expect(login.headers['content-security-policy']).toContain("script-src 'self'");
    expect(login.body).toContain('src="/assets/simplewebauthn-browser.js"');
    const done = await usePasskeyForm(browser, login, '/login/passkey', (options) => {
      expect(options.allowCredentials ?? []).toEqual([]); // the server does not know who it is yet
      expect(options.userVerification).toBe('required');
      return authenticator.authenticate(options as never);
    });
    expect(done.status, done.body).toBe(303);
    const back = await browser.get(done.location!);
    expect(back.location).toMatch(/^https:\/\/app\.example\.com\/cb\?code=/);
    const claims = await idTokenOf(back.location!, verifier);
    expect(claims.amr).toEqual(['hwk', 'user']);
    expect(claims.acr).toBe('urn:latchkey:mfa');
    const alice = (await t.store.findUserByUsername('alice'))!;
    expect(claims.sub).toBe(alice.id);
    const [passkey] = await t.store.listPasskeys(alice.id);
    expect(passkey!.counter).toBe(1);
    expect(passkey!.lastUsedAt).toBe(t.clock());
  });

  it('refuses another origin, no user verification, a cloned counter, a replayed answer, a user handle that is not the owner, and a disabled account', async () => {
    const browser = await setUp();
    const authenticator = await aliceWithPasskey(browser);
    const attempt = async (bend: Parameters<SoftAuthenticator['authenticate']>[1]) => {
      const login = await browser.get('/login?return_to=%2Factivate');
      return usePasskeyForm(browser, login, '/login/passkey', (options) => authenticator.authenticate(options as never, bend));
    };
    expect((await attempt({ origin: 'https://evil.example' })).status).toBe(401);
    expect((await attempt({ noUserVerification: true })).status).toBe(401);
    const bob = (await t.store.findUserByUsername('bob'))!;
    expect((await attempt({ userHandle: Buffer.from(bob.id).toString('base64url') })).status).toBe(401);
    expect(await signedIn(browser)).toBe(false);
    // A good one moves the counter on; an answer carrying an older count is a cloned key.
    expect((await attempt({})).status).toBe(303);
    await browser.post('/logout', {});
    const alice = (await t.store.findUserByUsername('alice'))!;
    const counter = (await t.store.listPasskeys(alice.id))[0]!.counter;
    expect((await attempt({ counter: counter - 1 })).status).toBe(401);
    expect(await signedIn(browser)).toBe(false);
    authenticator.credentials[0]!.counter = counter; // the genuine key carries on from where it was
    // The same answer posted twice: the challenge it signed is gone after the first post.
    const login = await browser.get('/login?return_to=%2Factivate');
    const csrf = inputValue(login.body, 'csrf_token')!;
    const options = JSON.parse((await browser.post('/login/passkey/options', { csrf_token: csrf })).body);
    const answer = JSON.stringify(authenticator.authenticate(options));
    expect((await browser.post('/login/passkey', { csrf_token: csrf, credential: answer, return_to: '/activate' })).status).toBe(303);
    await browser.post('/logout', {});
    const replay = await browser.post('/login/passkey', {
      csrf_token: inputValue((await browser.get('/login')).body, 'csrf_token')!,
      credential: answer,
      return_to: '/activate',
    });
    expect(replay.status).toBe(401);
    // A disabled account's passkey signs no one in.
    await t.store.setUserDisabled('alice', true, t.clock());
    expect((await attempt({})).status).toBe(401);
    expect(await signedIn(browser)).toBe(false);
  });

  it('failures count toward the per-address back-off; garbage is a 4xx; without the form token: 403', async () => {
    const browser = await setUp({ LATCHKEY_RATE_LIMIT_SIGNIN_ADDRESS: '3/30' });
    const login = await browser.get('/login?return_to=%2Factivate');
    const csrf = inputValue(login.body, 'csrf_token')!;
    expect((await browser.post('/login/passkey/options', { csrf_token: 'forged' })).status).toBe(403);
    expect((await browser.post('/login/passkey', { csrf_token: 'forged', credential: '{}' })).status).toBe(403);
    const statuses: number[] = [];
    for (const credential of ['garbage', '{"id":1}', 'x'.repeat(100_000), '{}', '{}', '{}']) {
      statuses.push((await browser.post('/login/passkey', { csrf_token: csrf, credential })).status);
    }
    // The huge one is refused by the body limit before anything is counted.
    expect(statuses).toEqual([401, 401, 413, 401, 429, 429]);
  });
});

describe('a passkey as the second step', () => {
  it('password, then the passkey: amr pwd+hwk+user', async () => {
    const browser = await setUp();
    const authenticator = await aliceWithPasskey(browser);
    const { url, verifier } = authorizeUrl();
    const login = await loginPageFor(browser, url);
    const first = await signIn(browser, login, 'alice', 'alice-password');
    expect(first.location).toMatch(/^\/login\/second-factor/);
    const step = await browser.get(first.location!);
    expect(step.status).toBe(200);
    expect(step.headers['content-security-policy']).toContain("script-src 'self'");
    // Its forms end, through the authorization, at the client: CSP form-action covers those redirects.
    expect(step.headers['content-security-policy']).toContain("form-action 'self' https://app.example.com;");
    const done = await usePasskeyForm(browser, step, '/login/second-factor/passkey', (options) => {
      // Here the server knows who it is: only their passkeys are allowed.
      expect((options.allowCredentials as Array<{ id: string }>).map((c) => c.id)).toEqual([authenticator.credentials[0]!.id.toString('base64url')]);
      return authenticator.authenticate(options as never);
    });
    expect(done.status, done.body).toBe(303);
    const back = await browser.get(done.location!);
    const claims = await idTokenOf(back.location!, verifier);
    expect(claims.amr).toEqual(['pwd', 'hwk', 'user']);
    expect(claims.acr).toBe('urn:latchkey:mfa');
  });

  it('someone else’s passkey, even a valid one, does not finish the step; failures count toward the back-off', async () => {
    const browser = await setUp({ LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT: '3/30' });
    const aliceKey = await aliceWithPasskey(browser);
    // Bob has a passkey too, on his own authenticator.
    const bobBrowser = new Browser(injectTransport(t.app));
    expect((await signInAs(bobBrowser, 'bob')).status).toBe(303);
    const bobKey = new SoftAuthenticator(issuer);
    expect((await registerPasskey(bobBrowser, bobKey)).status).toBe(200);
    // Alice's password, then Bob's passkey answering Alice's challenge.
    const first = await signInAs(browser);
    const step = await browser.get(first.location!);
    const withBobs = await usePasskeyForm(browser, step, '/login/second-factor/passkey', (options) =>
      bobKey.authenticate({ ...options, allowCredentials: undefined } as never),
    );
    expect(withBobs.status).toBe(401);
    expect(withBobs.body).toContain('That passkey could not be used');
    expect(await signedIn(browser)).toBe(false);
    // Two more failures (another origin), and the account's back-off holds even the right passkey.
    for (let i = 0; i < 2; i++) {
      const again = await browser.get(first.location!);
      expect(
        (
          await usePasskeyForm(browser, again, '/login/second-factor/passkey', (options) =>
            aliceKey.authenticate(options as never, { origin: 'https://evil.example' }),
          )
        ).status,
      ).toBe(401);
    }
    const page = await browser.get(first.location!);
    const held = await usePasskeyForm(browser, page, '/login/second-factor/passkey', (options) => aliceKey.authenticate(options as never));
    expect(held.status).toBe(429);
    expect(await signedIn(browser)).toBe(false);
  });

  it('options only inside a second step, with its form token', async () => {
    const browser = await setUp();
    await aliceWithPasskey(browser);
    const noStep = await browser.post('/login/second-factor/passkey/options', { csrf_token: inputValue((await browser.get('/login')).body, 'csrf_token')! });
    expect(noStep.status).toBe(403); // the sign-in page's token is not the second step's
    const first = await signInAs(browser);
    const step = await browser.get(first.location!);
    expect((await browser.post('/login/second-factor/passkey/options', { csrf_token: 'forged' })).status).toBe(403);
    expect((await browser.post('/login/second-factor/passkey/options', { csrf_token: inputValue(step.body, 'csrf_token')! })).status).toBe(200);
    // Someone with only an authenticator app has no passkey to offer.
    await browser.post('/logout', {});
    const other = new Browser(injectTransport(t.app));
    await signInAs(other, 'bob');
    await enrollTotp(t, other);
    await other.post('/logout', {});
    t.clock.advance(60);
    const bobFirst = await signInAs(other, 'bob');
    const bobStep = await other.get(bobFirst.location!);
    expect(bobStep.body).not.toContain('action="/login/second-factor/passkey"');
    expect((await other.post('/login/second-factor/passkey/options', { csrf_token: inputValue(bobStep.body, 'csrf_token')! })).status).toBe(400);
  });
});

describe('managing passkeys', () => {
  it('renaming and removing one’s own; another person’s passkey is untouched; the last one cannot go under LATCHKEY_MFA=required', async () => {
    const browser = await setUp();
    expect((await signInAs(browser)).status).toBe(303);
    await registerPasskey(browser, new SoftAuthenticator(issuer), 'One');
    t.clock.advance(1);
    await registerPasskey(browser, new SoftAuthenticator(issuer), 'Two');
    const alice = (await t.store.findUserByUsername('alice'))!;
    const [one, two] = await t.store.listPasskeys(alice.id);
    const bobBrowser = new Browser(injectTransport(t.app));
    await signInAs(bobBrowser, 'bob');
    const bobPage = await bobBrowser.get('/account/security');
    const bobCsrf = inputValue(bobPage.body, 'csrf_token')!;
    // Bob cannot rename or remove Alice's passkey by its id.
    await bobBrowser.post('/account/security/passkeys/rename', { csrf_token: bobCsrf, id: one!.id, name: 'Mine now' });
    await bobBrowser.post('/account/security/passkeys/remove', { csrf_token: bobCsrf, id: one!.id });
    expect((await t.store.listPasskeys(alice.id)).map((p) => p.name)).toEqual(['One', 'Two']);
    // Alice can; without the form token she cannot.
    const page = await browser.get('/account/security');
    const csrf = inputValue(page.body, 'csrf_token')!;
    expect((await browser.post('/account/security/passkeys/rename', { id: one!.id, name: 'Forged' })).status).toBe(403);
    expect((await browser.post('/account/security/passkeys/rename', { csrf_token: 'forged', id: one!.id, name: 'Forged' })).status).toBe(403);
    expect((await browser.post('/account/security/passkeys/rename', { csrf_token: csrf, id: one!.id, name: 'a\u202eb' })).status).toBe(400);
    expect((await browser.post('/account/security/passkeys/rename', { csrf_token: csrf, id: one!.id, name: 'Phone' })).status).toBe(303);
    expect((await browser.post('/account/security/passkeys/remove', { csrf_token: csrf, id: two!.id })).status).toBe(303);
    expect((await t.store.listPasskeys(alice.id)).map((p) => p.name)).toEqual(['Phone']);
    const listed = await browser.get('/account/security');
    expect(listed.body).toContain('Phone');
    expect(listed.body).not.toContain('>Two<');
    const events = logLines.map((l) => (JSON.parse(l) as { event?: string }).event);
    expect(events).toEqual(expect.arrayContaining(['second_factor.enrolled', 'second_factor.renamed', 'second_factor.removed']));
    await t.close();

    // Under required, the last passkey stays (the recovery codes are not a factor of their own).
    t = await testApp({ LATCHKEY_ISSUER: issuer, LATCHKEY_MFA: 'required' });
    await addUser(t.store, 'alice', 'alice-password');
    await addClient(t.store, 'web', { redirectUris: ['https://app.example.com/cb'], grantTypes: ['authorization_code'], firstParty: true });
    const strict = new Browser(injectTransport(t.app));
    const afterPassword = await signInAs(strict, 'alice', authorizeUrl().url);
    // Required: the authorization sends a person without a factor to set one up first.
    const toStepUp = await strict.get(afterPassword.location!);
    const toEnrol = await strict.get(toStepUp.location!);
    expect(toEnrol.location).toMatch(/^\/account\/security\?return_to=/);
    const enrolled = await registerPasskey(strict, new SoftAuthenticator(issuer), 'Only');
    expect(enrolled.status, enrolled.body).toBe(200);
    const only = (await t.store.listPasskeys((await t.store.findUserByUsername('alice'))!.id))[0]!;
    const strictPage = await strict.get('/account/security');
    const refused = await strict.post('/account/security/passkeys/remove', { csrf_token: inputValue(strictPage.body, 'csrf_token')!, id: only.id });
    expect(refused.status).toBe(409);
    expect(await t.store.findPasskey(only.id)).toBeDefined();
  });

  it('at most 20 passkeys per person', async () => {
    const browser = await setUp();
    await signInAs(browser);
    const authenticator = new SoftAuthenticator(issuer);
    for (let i = 0; i < 20; i++) expect((await registerPasskey(browser, authenticator, `Key ${i}`)).status).toBeLessThan(400);
    const page = await browser.get('/account/security');
    const options = await browser.post('/account/security/passkeys/options', { csrf_token: inputValue(page.body, 'csrf_token')! });
    expect(options.status).toBe(409);
    expect(await t.store.listPasskeys((await t.store.findUserByUsername('alice'))!.id)).toHaveLength(20);
  });
});
