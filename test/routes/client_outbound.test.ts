/**
 * Server-side requests to addresses a client registered (SSRF): a client that registered itself
 * (RFC 7591) cannot make the server POST a logout token to, or fetch a JWK Set from, a loopback,
 * private or link-local address — refused at registration when the URI names one outright, and at
 * connect time when a name leads there. A listener on 127.0.0.1 stands for the internal service and
 * records every request that reaches it. Operator-made clients keep internal targets, and
 * LATCHKEY_OUTBOUND_ALLOW lets a self-registered client reach the internal hosts it names.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { randomSecret, secretPrefix, sha256 } from '../../src/crypto/secrets.js';
import { notifyBackchannelLogout } from '../../src/oauth/backchannel_logout.js';
import { addApi, addClient, addUser, form, pkcePair, testApp, type TestApp } from '../helpers/app.js';
import { Browser, injectTransport, personAllows } from '../helpers/browser.js';
import { waitFor } from '../helpers/wait.js';

const reports = 'https://reports.example.com';
const redirectUri = 'https://rp.example.com/callback';
const assertionType = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

let t: TestApp | undefined;
let logLines: string[];
let internal: Server;
let internalBase: string;
let hits: { method: string; path: string; body: string }[];
let keyPair: { publicKey: CryptoKey; privateKey: CryptoKey };
let publicJwk: JWK;

beforeEach(async () => {
  hits = [];
  keyPair = await generateKeyPair('ES256');
  publicJwk = { ...(await exportJWK(keyPair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  // The internal service: it answers every request as the client would wish (200, and its key set),
  // so a request that reached it would make the attack work.
  internal = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer | string) => (body += d.toString()));
    req.on('end', () => {
      hits.push({ method: req.method ?? '', path: req.url ?? '', body });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [publicJwk] }));
    });
  });
  await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
  internalBase = `http://127.0.0.1:${(internal.address() as { port: number }).port}`;
});

afterEach(async () => {
  await t?.close();
  t = undefined;
  internal.closeAllConnections();
  await new Promise((resolve) => internal.close(resolve));
});

async function start(env: Record<string, string> = {}): Promise<TestApp> {
  logLines = [];
  t = await testApp(env, { logLines });
  await addApi(t.store, reports, 'Reports', [], ['read:reports']);
  await addUser(t.store, 'alice', 'alice-password');
  return t;
}

const app = () => t!;
const internalPort = () => new URL(internalBase).port;
const events = () => logLines.map((l) => JSON.parse(l) as { event?: string; [k: string]: unknown }).filter((l) => l.event);

async function initialToken(): Promise<string> {
  const token = randomSecret(secretPrefix.registrationToken);
  const now = Math.floor(app().clock());
  await app().store.createRegistrationToken({ tokenHash: sha256(token), createdAt: now, expiresAt: now + 3600, usedAt: undefined, clientId: undefined });
  return token;
}

function register(body: unknown, token: string) {
  return app().app.inject({
    method: 'POST',
    url: '/oauth/register',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    payload: JSON.stringify(body),
  });
}

/** A public web client with a back-channel logout URI, registered through the endpoint. */
const webClient = (backchannelLogoutUri: string) => ({
  client_name: 'Web App',
  redirect_uris: [redirectUri],
  token_endpoint_auth_method: 'none',
  backchannel_logout_uri: backchannelLogoutUri,
});

/** A private_key_jwt client with a jwks_uri, for machine tokens and signed request objects. */
const keyClient = (jwksUri: string) => ({
  client_name: 'Key App',
  redirect_uris: [redirectUri],
  grant_types: ['authorization_code', 'client_credentials'],
  token_endpoint_auth_method: 'private_key_jwt',
  jwks_uri: jwksUri,
});

/**
 * Moves a registered client's server-side targets, as the store keeps them (a client registered
 * before these checks existed, or a name whose DNS now answers an internal address).
 */
async function storedTargets(clientId: string, targets: { backchannelLogoutUri?: string; jwksUri?: string }): Promise<void> {
  const client = (await app().store.findClient(clientId))!;
  const changes = {
    name: client.name,
    redirectUris: client.redirectUris,
    postLogoutRedirectUris: client.postLogoutRedirectUris,
    backchannelLogoutUri: targets.backchannelLogoutUri ?? client.backchannelLogoutUri,
    grantTypes: client.grantTypes,
    requirePkce: client.requirePkce,
    jwksUri: targets.jwksUri ?? client.jwksUri,
    jwks: client.jwks,
  };
  expect(await app().store.updateRegisteredClient(clientId, { changes, tokenEndpointAuthMethod: client.tokenEndpointAuthMethod!, secret: 'keep' })).toBe(true);
}

/** Alice signs in and allows `clientId`: the session the code was issued in. */
async function sessionWith(clientId: string) {
  const browser = new Browser(injectTransport(app().app));
  const { challenge } = pkcePair();
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    scope: 'openid',
    state: 's',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
  const back = await personAllows(browser, new URL(`http://latchkey.test/authorize?${query}`), 'alice', 'alice-password');
  expect(back.searchParams.get('code')).toMatch(/^lk_ac_/);
  const user = (await app().store.findUserByUsername('alice'))!;
  const sessions = await app().store.listSessions(user.id, Math.floor(app().clock()));
  expect(sessions).toHaveLength(1);
  return { browser, session: sessions[0]! };
}

const source = () => ({ log: app().app.log, ip: '127.0.0.1' });
const noSleep = async () => undefined;

function assertion(clientId: string, audience = 'http://latchkey.test/oauth/token') {
  const now = Math.floor(app().clock());
  return new SignJWT({ jti: randomSecret() })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer(clientId)
    .setSubject(clientId)
    .setAudience(audience)
    .setIssuedAt(now)
    .setExpirationTime(now + 60)
    .sign(keyPair.privateKey);
}

function machineToken(signed: string) {
  const request = form({ grant_type: 'client_credentials', client_assertion_type: assertionType, client_assertion: signed });
  return app().app.inject({ method: 'POST', url: '/oauth/token', payload: request.payload, headers: request.headers });
}

describe('registration refuses server-side targets that name an internal host (RFC 7591 §3.2.2 invalid_client_metadata)', () => {
  const internalTargets = (port: string) => [
    `http://127.0.0.1:${port}/internal-admin/x`,
    `http://[::1]:${port}/internal-admin/x`,
    `http://localhost:${port}/internal-admin/x`,
    'https://169.254.169.254/latest/meta-data/',
    'https://10.1.2.3/backchannel',
    'https://[::ffff:127.0.0.1]/backchannel',
    'https://0x7f000001/backchannel',
    'https://[fd00::1]/backchannel',
  ];

  it('backchannel_logout_uri http://127.0.0.1:<port>/internal-admin/x and other spellings of an internal host: refused, nothing stored, the token not spent', async () => {
    await start();
    const clientsBefore = (await app().store.listClients()).length;
    const token = await initialToken();
    for (const uri of internalTargets(internalPort())) {
      const res = await register(webClient(uri), token);
      expect(res.statusCode, uri).toBe(400);
      expect(res.json(), uri).toEqual({
        error: 'invalid_client_metadata',
        error_description:
          'backchannel_logout_uri must name a public host: the server does not send requests to loopback, private or link-local addresses for registered clients.',
      });
    }
    expect((await app().store.listClients()).length).toBe(clientsBefore);
    expect((await register(webClient('https://rp.example.com/backchannel'), token)).statusCode).toBe(201);
    expect(hits).toEqual([]);
  });

  it('jwks_uri naming an internal host: refused, and no request is made', async () => {
    await start();
    const token = await initialToken();
    for (const uri of internalTargets(internalPort())) {
      const res = await register(keyClient(uri), token);
      expect(res.statusCode, uri).toBe(400);
      expect(res.json().error, uri).toBe('invalid_client_metadata');
      expect(res.json().error_description).toMatch(/^jwks_uri must name a public host/);
    }
    expect(hits).toEqual([]);
  });

  it('an RFC 7592 update cannot move the targets inside either', async () => {
    await start();
    const created = (await register(webClient('https://rp.example.com/backchannel'), await initialToken())).json();
    const res = await app().app.inject({
      method: 'PUT',
      url: `/oauth/register/${created.client_id}`,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${created.registration_access_token}` },
      payload: JSON.stringify({ ...webClient(`${internalBase}/internal-admin/x`), client_id: created.client_id }),
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_client_metadata');
    expect((await app().store.findClient(created.client_id))?.backchannelLogoutUri).toBe('https://rp.example.com/backchannel');
  });
});

describe('at send time: the address connected to is checked (names that resolve inside, clients stored before these checks)', () => {
  it('back-channel logout: a registered client whose URI resolves to 127.0.0.1 (localhost) gets no request; the failure is audited and not retried', async () => {
    await start();
    const created = (await register(webClient('https://rp.example.com/backchannel'), await initialToken())).json();
    await storedTargets(created.client_id, { backchannelLogoutUri: `http://localhost:${internalPort()}/internal-admin/x` });
    const { session } = await sessionWith(created.client_id);
    expect(await notifyBackchannelLogout(app().app.services, session, source(), noSleep)).toEqual([
      { clientId: created.client_id, delivered: false, attempts: 1 },
    ]);
    expect(hits).toEqual([]);
    const failed = events().find((e) => e.event === 'logout.backchannel_failed');
    expect(failed).toMatchObject({ clientId: created.client_id, attempts: 1 });
    expect(failed?.refused).toMatch(/^outbound request refused: localhost resolves to a loopback address (127\.0\.0\.1|::1)$/);
  });

  it('back-channel logout: a stored literal http://127.0.0.1:<port>/internal-admin/x is refused too, through a real sign-out', async () => {
    await start();
    const created = (await register(webClient('https://rp.example.com/backchannel'), await initialToken())).json();
    await storedTargets(created.client_id, { backchannelLogoutUri: `${internalBase}/internal-admin/x` });
    const { browser } = await sessionWith(created.client_id);
    await browser.get('/logout');
    // The delivery runs in the background: wait for its audit event.
    await waitFor(() => events().some((e) => e.event === 'logout.backchannel_failed'), { what: 'the logout.backchannel_failed event' });
    expect(events().find((e) => e.event === 'logout.backchannel_failed')).toMatchObject({
      clientId: created.client_id,
      attempts: 1,
      refused: 'outbound request refused: loopback address 127.0.0.1',
    });
    expect(hits).toEqual([]);
  });

  it('private_key_jwt: a registered client whose jwks_uri leads to 127.0.0.1 gets invalid_client, and no request reaches the address', async () => {
    await start();
    const created = (await register(keyClient('https://rp.example.com/jwks.json'), await initialToken())).json();
    await app().store.saveClientGrant({ clientId: created.client_id, api: reports, scopes: ['read:reports'], createdAt: 1_800_000_000 });
    for (const uri of [`${internalBase}/internal-admin/jwks`, `http://localhost:${internalPort()}/internal-admin/jwks`]) {
      await storedTargets(created.client_id, { jwksUri: uri });
      const res = await machineToken(await assertion(created.client_id));
      expect(res.statusCode, uri).toBe(401);
      expect(res.json().error, uri).toBe('invalid_client');
    }
    expect(hits).toEqual([]);
  });

  it('a signed request object from such a client is invalid_request_object, and no request reaches the address', async () => {
    await start();
    const created = (await register(keyClient('https://rp.example.com/jwks.json'), await initialToken())).json();
    await storedTargets(created.client_id, { jwksUri: `http://localhost:${internalPort()}/internal-admin/jwks` });
    const { challenge } = pkcePair();
    const parameters = {
      response_type: 'code',
      client_id: created.client_id,
      redirect_uri: redirectUri,
      scope: 'openid',
      state: 's',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    };
    const request = await new SignJWT(parameters)
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(created.client_id)
      .setAudience('http://latchkey.test')
      .sign(keyPair.privateKey);
    const res = await app().app.inject({
      method: 'GET',
      url: `/authorize?${new URLSearchParams({ response_type: 'code', client_id: created.client_id, redirect_uri: redirectUri, request })}`,
    });
    expect(res.statusCode).toBe(302);
    expect(new URL(res.headers.location as string).searchParams.get('error')).toBe('invalid_request_object');
    expect(hits).toEqual([]);
  });
});

describe('who may still reach internal addresses', () => {
  it('clients the operator made keep internal targets: the logout token is POSTed, the key set fetched', async () => {
    await start();
    await addClient(app().store, 'ops-web', {
      redirectUris: [redirectUri],
      grantTypes: ['authorization_code'],
      backchannelLogoutUri: `${internalBase}/backchannel`,
    });
    await addClient(app().store, 'ops-machine', { grantTypes: ['client_credentials'], jwksUri: `${internalBase}/jwks` });
    await app().store.saveClientGrant({ clientId: 'ops-machine', api: reports, scopes: ['read:reports'], createdAt: 1_800_000_000 });
    expect((await machineToken(await assertion('ops-machine'))).statusCode).toBe(200);
    const { session } = await sessionWith('ops-web');
    expect(await notifyBackchannelLogout(app().app.services, session, source(), noSleep)).toEqual([{ clientId: 'ops-web', delivered: true, attempts: 1 }]);
    expect(hits.map((h) => `${h.method} ${h.path}`)).toEqual(['GET /jwks', 'POST /backchannel']);
  });

  it('LATCHKEY_OUTBOUND_ALLOW=127.0.0.1: a self-registered client may name the allowed internal address, and both requests reach it', async () => {
    await start({ LATCHKEY_OUTBOUND_ALLOW: '127.0.0.1' });
    const web = await register(webClient(`${internalBase}/internal-admin/backchannel`), await initialToken());
    expect(web.statusCode).toBe(201);
    const machine = await register(keyClient(`${internalBase}/internal-admin/jwks`), await initialToken());
    expect(machine.statusCode).toBe(201);
    const machineId = machine.json().client_id as string;
    await app().store.saveClientGrant({ clientId: machineId, api: reports, scopes: ['read:reports'], createdAt: 1_800_000_000 });
    expect((await machineToken(await assertion(machineId))).statusCode).toBe(200);
    const { session } = await sessionWith(web.json().client_id);
    expect(await notifyBackchannelLogout(app().app.services, session, source(), noSleep)).toEqual([
      { clientId: web.json().client_id, delivered: true, attempts: 1 },
    ]);
    expect(hits.map((h) => `${h.method} ${h.path}`)).toEqual(['GET /internal-admin/jwks', 'POST /internal-admin/backchannel']);
    expect(new URLSearchParams(hits[1]!.body).get('logout_token')).toMatch(/^ey/);
    // Another internal address is still refused.
    expect((await register(webClient('https://10.1.2.3/backchannel'), await initialToken())).json().error).toBe('invalid_client_metadata');
  });
});
