/**
 * Sign-out: OIDC RP-Initiated Logout 1.0 on /logout — id_token_hint (ours, expired ones
 * too), registered post_logout_redirect_uri only, state, client_id, the confirmation form when the
 * hint is missing or not for this person — and Back-Channel Logout 1.0: logout tokens POSTed to a
 * receiving server started by the test, verified with the JWKS, with bounded retries.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, SignJWT, generateKeyPair } from 'jose';
import { addClient, addUser, form, pkcePair, testApp, type TestApp } from '../helpers/app.js';
import { Browser, inputValue, injectTransport, signIn } from '../helpers/browser.js';
import { notifyBackchannelLogout, retryPausesMs } from '../../src/oauth/backchannel_logout.js';
import { waitFor } from '../helpers/wait.js';

let t: TestApp;
let receiver: Server;
let receiverUrl: string;
let received: { body: string; contentType: string | undefined }[];
let answers: number[];
const logLines: string[] = [];

beforeEach(async () => {
  received = [];
  answers = [];
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer | string) => (body += d.toString()));
    req.on('end', () => {
      received.push({ body, contentType: req.headers['content-type'] });
      res.writeHead(answers.shift() ?? 200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/backchannel`;
});
afterEach(async () => {
  await t.close();
  await new Promise((resolve) => receiver.close(resolve));
});

async function setUp() {
  logLines.length = 0;
  t = await testApp({}, { logLines });
  await addUser(t.store, 'alice', 'alice-password');
  await addUser(t.store, 'bob', 'bob-password');
  await addClient(t.store, 'web', {
    name: 'Web App',
    redirectUris: ['https://app.example.com/cb'],
    grantTypes: ['authorization_code'],
    firstParty: true,
    postLogoutRedirectUris: ['https://app.example.com/signed-out'],
    backchannelLogoutUri: receiverUrl,
  });
  await addClient(t.store, 'other', {
    redirectUris: ['https://other.example.com/cb'],
    grantTypes: ['authorization_code'],
    firstParty: true,
    postLogoutRedirectUris: ['https://other.example.com/bye'],
  });
  return new Browser(injectTransport(t.app));
}

/** Signs `who` in and runs a code flow for `clientId`: the id_token. */
async function idTokenFor(browser: Browser, who = 'alice', clientId = 'web', redirectUri = 'https://app.example.com/cb') {
  const { verifier, challenge } = pkcePair();
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    scope: 'openid',
    state: 's',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    nonce: 'n',
  });
  let res = await browser.get(`/authorize?${query}`);
  if (res.location?.startsWith('/login')) res = await signIn(browser, await browser.get(res.location), who, `${who}-password`);
  while (res.location && !res.location.startsWith('https://')) res = await browser.get(res.location);
  const code = new URL(res.location!).searchParams.get('code')!;
  const token = await t.app.inject({
    method: 'POST',
    url: '/oauth/token',
    ...form({ grant_type: 'authorization_code', client_id: clientId, code, redirect_uri: redirectUri, code_verifier: verifier }),
  });
  expect(token.statusCode, token.body).toBe(200);
  return token.json<{ id_token: string }>().id_token;
}

const signedIn = async (browser: Browser) => (await browser.get('/login')).status === 303;
const logoutUrl = (params: Record<string, string>) => `/logout?${new URLSearchParams(params)}`;
const events = () => logLines.map((l) => JSON.parse(l) as { event?: string; [k: string]: unknown }).filter((l) => l.event);

describe('RP-Initiated Logout', () => {
  it('discovery names the end_session_endpoint and back-channel support', async () => {
    await setUp();
    const meta = (await t.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
    expect(meta).toMatchObject({
      end_session_endpoint: 'http://latchkey.test/logout',
      backchannel_logout_supported: true,
      backchannel_logout_session_supported: true,
    });
  });

  it('a valid id_token_hint and a registered address: signed out at once, sent back with state', async () => {
    const browser = await setUp();
    const idToken = await idTokenFor(browser);
    expect(decodeJwt(idToken).sid).toEqual(expect.any(String));
    const res = await browser.get(logoutUrl({ id_token_hint: idToken, post_logout_redirect_uri: 'https://app.example.com/signed-out', state: 'xyz 1' }));
    expect(res.status).toBe(303);
    expect(res.location).toBe('https://app.example.com/signed-out?state=xyz+1');
    expect(await signedIn(browser)).toBe(false);
    expect(events().find((e) => e.event === 'logout.rp_initiated')).toBeDefined();
  });

  it('an expired id_token_hint still counts (OIDC Core §3.1.2.1); POST works like GET; one from an earlier session asks first', async () => {
    const browser = await setUp();
    const earlier = await idTokenFor(browser);
    await signIn(browser, await browser.get('/login?fresh=1'), 'alice', 'alice-password');
    expect((await browser.get(logoutUrl({ id_token_hint: earlier }))).body).toContain('name="decision"');
    expect(await signedIn(browser)).toBe(true);
    const idToken = await idTokenFor(browser);
    t.clock.advance(3 * 3600);
    const res = await browser.post('/logout', { id_token_hint: idToken, post_logout_redirect_uri: 'https://app.example.com/signed-out' });
    expect(res.location).toBe('https://app.example.com/signed-out');
    expect(await signedIn(browser)).toBe(false);
  });

  it('an unregistered address, another client’s address, or an address with no client named: a page, never a redirect', async () => {
    const browser = await setUp();
    const idToken = await idTokenFor(browser);
    for (const params of [
      { id_token_hint: idToken, post_logout_redirect_uri: 'https://evil.example/' },
      { id_token_hint: idToken, post_logout_redirect_uri: 'https://app.example.com/signed-out/' },
      { id_token_hint: idToken, post_logout_redirect_uri: 'https://other.example.com/bye' },
      { post_logout_redirect_uri: 'https://app.example.com/signed-out' },
      { client_id: 'nobody', post_logout_redirect_uri: 'https://app.example.com/signed-out' },
      { client_id: 'other', id_token_hint: idToken },
    ] as Array<Record<string, string>>) {
      const res = await browser.get(logoutUrl(params));
      expect(res.status, JSON.stringify(params).slice(0, 120)).toBe(400);
      expect(res.location).toBeUndefined();
      expect(res.body).toContain('This sign-out request cannot be used');
    }
    expect(await signedIn(browser)).toBe(true);
  });

  it('without a hint the person confirms (CSRF-protected): Sign out sends back with state, Stay keeps the session', async () => {
    const browser = await setUp();
    await idTokenFor(browser);
    const params = { client_id: 'web', post_logout_redirect_uri: 'https://app.example.com/signed-out', state: 'st' };
    const ask = await browser.get(logoutUrl(params));
    expect(ask.status).toBe(200);
    expect(ask.body).toContain('Web App</strong> asks to sign you out');
    expect(ask.headers['content-security-policy']).toContain("form-action 'self' https://app.example.com");
    expect(await signedIn(browser)).toBe(true);
    const fields = { ...params, csrf_token: inputValue(ask.body, 'csrf_token')! };
    expect((await browser.post('/logout', { ...fields, csrf_token: 'forged', decision: 'logout' })).status).toBe(403);
    expect(await signedIn(browser)).toBe(true);
    const stay = await browser.post('/logout', { ...fields, decision: 'stay' });
    expect(stay.body).toContain('still signed in');
    expect(await signedIn(browser)).toBe(true);
    const out = await browser.post('/logout', {
      ...fields,
      csrf_token: inputValue((await browser.get(logoutUrl(params))).body, 'csrf_token')!,
      decision: 'logout',
    });
    expect(out.location).toBe('https://app.example.com/signed-out?state=st');
    expect(await signedIn(browser)).toBe(false);
  });

  it('a hint that is not ours, or is for someone else, is not trusted: the person is asked', async () => {
    const browser = await setUp();
    const aliceToken = await idTokenFor(browser);
    const { privateKey } = await generateKeyPair('RS256');
    const forged = await new SignJWT({ sub: (await t.store.findUserByUsername('alice'))!.id, aud: 'web', iss: 'http://latchkey.test' })
      .setProtectedHeader({ alg: 'RS256', kid: decodeProtectedHeader(aliceToken).kid! })
      .setIssuedAt()
      .sign(privateKey);
    for (const hint of [forged, 'not.a.jwt', 'x'.repeat(9000)]) {
      const res = await browser.get(logoutUrl({ id_token_hint: hint }));
      expect(res.status, hint.slice(0, 20)).toBeLessThan(500);
      if (res.status === 200) expect(res.body).toContain('name="decision"');
      expect(await signedIn(browser)).toBe(true);
    }
    // Bob's id_token in Alice's browser: Alice is asked, not signed out.
    const bobBrowser = new Browser(injectTransport(t.app));
    const bobToken = await idTokenFor(bobBrowser, 'bob');
    const asked = await browser.get(logoutUrl({ id_token_hint: bobToken, post_logout_redirect_uri: 'https://app.example.com/signed-out' }));
    expect(asked.body).toContain('name="decision"');
    expect(await signedIn(browser)).toBe(true);
  });

  it('a plain /logout link still signs out at once', async () => {
    const browser = await setUp();
    await idTokenFor(browser);
    const res = await browser.get('/logout');
    expect(res.status).toBe(200);
    expect(res.body).toContain('signed out');
    expect(await signedIn(browser)).toBe(false);
  });
});

describe('Back-Channel Logout', () => {
  it('the client of the session gets a logout token that verifies with the JWKS: sub, sid, events, no nonce', async () => {
    const browser = await setUp();
    const idToken = await idTokenFor(browser);
    await idTokenFor(browser, 'alice', 'other', 'https://other.example.com/cb'); // no back channel: not told
    await browser.get(logoutUrl({ id_token_hint: idToken }));
    await waitFor(() => received.length > 0 && events().some((e) => e.event === 'logout.backchannel_delivered'), { what: 'the back-channel logout delivery' });
    expect(received).toHaveLength(1);
    expect(received[0]!.contentType).toBe('application/x-www-form-urlencoded');
    const token = new URLSearchParams(received[0]!.body).get('logout_token')!;
    const jwks = createLocalJWKSet((await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json());
    const { payload, protectedHeader } = await jwtVerify(token, jwks, {
      issuer: 'http://latchkey.test',
      audience: 'web',
      typ: 'logout+jwt',
      currentDate: new Date(t.clock() * 1000),
    });
    const hint = decodeJwt(idToken);
    expect(payload).toMatchObject({ sub: hint.sub, sid: hint.sid, events: { 'http://schemas.openid.net/event/backchannel-logout': {} } });
    expect(payload.nonce).toBeUndefined();
    expect(payload.jti).toEqual(expect.any(String));
    expect(payload.exp! - payload.iat!).toBeLessThanOrEqual(120);
    expect(protectedHeader.alg).toBe('RS256');
  });

  it('a password change on /account (ending the other sign-ins) tells the clients of the sessions it ended', async () => {
    const browser = await setUp();
    await idTokenFor(browser);
    const page = await browser.get('/account');
    const changed = await browser.post('/account/password', {
      csrf_token: inputValue(page.body, 'csrf_token')!,
      current_password: 'alice-password',
      new_password: 'a-new-password',
    });
    expect(changed.status).toBe(200);
    await waitFor(() => received.length > 0, { what: 'a back-channel logout request' });
    expect(received).toHaveLength(1);
  });

  it('signing out from /account ("Sign out here", "Sign out everywhere") tells the clients too', async () => {
    const browser = await setUp();
    await idTokenFor(browser);
    const page = await browser.get('/account');
    await browser.post('/account/sign-out-everywhere', { csrf_token: inputValue(page.body, 'csrf_token')! });
    await waitFor(() => received.length > 0, { what: 'a back-channel logout request' });
    expect(received).toHaveLength(1);
  });

  it('retries a failing receiver a bounded number of times, then gives up and says so', async () => {
    const browser = await setUp();
    await idTokenFor(browser);
    const session = (await t.store.listSessions((await t.store.findUserByUsername('alice'))!.id, Math.floor(t.clock())))[0]!;
    const pauses: number[] = [];
    const sleep = async (ms: number) => void pauses.push(ms);
    const source = { log: t.app.log, ip: '127.0.0.1' };
    answers = [500, 503, 200];
    expect(await notifyBackchannelLogout(t.app.services, session, source, sleep)).toEqual([{ clientId: 'web', delivered: true, attempts: 3 }]);
    expect(pauses).toEqual(retryPausesMs);
    received = [];
    answers = [500, 500, 500, 500];
    expect(await notifyBackchannelLogout(t.app.services, session, source, sleep)).toEqual([
      { clientId: 'web', delivered: false, attempts: 1 + retryPausesMs.length },
    ]);
    expect(received).toHaveLength(1 + retryPausesMs.length);
    expect(events().some((e) => e.event === 'logout.backchannel_failed' && e.clientId === 'web')).toBe(true);
  });
});
