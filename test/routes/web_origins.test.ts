/**
 * Where web origins are registered: `latchkey clients add --web-origin` (run through the
 * executable's entry point on a database file), `web_origins` in dynamic client registration
 * metadata (RFC 7591, validated like the CLI's, invalid_client_metadata otherwise; RFC 7592 updates
 * replace them), and the admin console's client page (a CSRF-protected form field, one origin per
 * line, bad input answered with the page). What is stored is then what CORS answers.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/main.js';
import { randomSecret, secretPrefix, sha256 } from '../../src/crypto/secrets.js';
import { addClient, addUser, testApp, type TestApp } from '../helpers/app.js';
import { Browser, decodeEntities, inputValue, injectTransport, signIn } from '../helpers/browser.js';

let t: TestApp;
let logLines: string[];

beforeEach(async () => {
  logLines = [];
  t = await testApp({ LATCHKEY_MFA: 'off' }, { logLines });
});
afterEach(() => t.close());

async function initialToken(): Promise<string> {
  const token = randomSecret(secretPrefix.registrationToken);
  const now = Math.floor(t.clock());
  await t.store.createRegistrationToken({ tokenHash: sha256(token), createdAt: now, expiresAt: now + 3600, usedAt: undefined, clientId: undefined });
  return token;
}

function register(body: unknown, token: string) {
  return t.app.inject({
    method: 'POST',
    url: '/oauth/register',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    payload: JSON.stringify(body),
  });
}

const spa = {
  client_name: 'Photo Editor',
  redirect_uris: ['https://photos.example.com/callback'],
  grant_types: ['authorization_code', 'refresh_token'],
  token_endpoint_auth_method: 'none',
};

describe('web_origins in dynamic client registration (RFC 7591)', () => {
  it('are accepted, stored in their serialised form, returned, and answered by CORS', async () => {
    const res = await register(
      { ...spa, web_origins: ['HTTPS://Photos.Example.com:443', 'http://localhost:5173', 'https://photos.example.com'] },
      await initialToken(),
    );
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json<{ client_id: string; web_origins: string[]; registration_access_token: string }>();
    expect(body.web_origins).toEqual(['https://photos.example.com', 'http://localhost:5173']);
    expect((await t.store.findClient(body.client_id))?.webOrigins).toEqual(['https://photos.example.com', 'http://localhost:5173']);
    const read = await t.app.inject({
      method: 'GET',
      url: `/oauth/register/${body.client_id}`,
      headers: { authorization: `Bearer ${body.registration_access_token}` },
    });
    expect(read.json()).toMatchObject({ web_origins: ['https://photos.example.com', 'http://localhost:5173'] });
    const token = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://photos.example.com' },
      payload: new URLSearchParams({ grant_type: 'refresh_token', client_id: body.client_id, refresh_token: 'lk_rt_x' }).toString(),
    });
    expect(token.headers['access-control-allow-origin']).toBe('https://photos.example.com');
  });

  it('a registration without them has none, and says none', async () => {
    const res = await register(spa, await initialToken());
    expect(res.statusCode).toBe(201);
    expect(res.json()).not.toHaveProperty('web_origins');
    expect((await t.store.findClient(res.json<{ client_id: string }>().client_id))?.webOrigins).toEqual([]);
  });

  it.each([
    ['a path', ['https://photos.example.com/']],
    ['a wildcard', ['https://*.example.com']],
    ['plain http to a host that is not loopback', ['http://photos.example.com']],
    ['user information', ['https://me@photos.example.com']],
    ['null', ['null']],
    ['a string instead of a list', 'https://photos.example.com'],
    ['a number in the list', [42]],
    ['more than 20', Array.from({ length: 21 }, (_, n) => `https://app${n}.example.com`)],
  ])('%s → invalid_client_metadata, nothing registered, the token unspent', async (_name, webOrigins) => {
    const before = (await t.store.listClients()).length;
    const token = await initialToken();
    const res = await register({ ...spa, web_origins: webOrigins }, token);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_client_metadata' });
    expect(res.json().error_description).not.toContain('example.com');
    expect(await t.store.listClients()).toHaveLength(before);
    expect(await t.store.findRegistrationToken(sha256(token))).toMatchObject({ usedAt: undefined });
  });

  it('an RFC 7592 update replaces them; one that omits them removes them', async () => {
    const made = (await register({ ...spa, web_origins: ['https://photos.example.com'] }, await initialToken())).json<{
      client_id: string;
      registration_access_token: string;
    }>();
    const put = (body: unknown) =>
      t.app.inject({
        method: 'PUT',
        url: `/oauth/register/${made.client_id}`,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${made.registration_access_token}` },
        payload: JSON.stringify({ ...(body as object), client_id: made.client_id }),
      });
    const updated = await put({ ...spa, web_origins: ['https://edit.example.com'] });
    expect(updated.statusCode, updated.body).toBe(200);
    expect(updated.json()).toMatchObject({ web_origins: ['https://edit.example.com'] });
    expect((await put({ ...spa, web_origins: ['https://edit.example.com/x'] })).json()).toMatchObject({ error: 'invalid_client_metadata' });
    expect((await t.store.findClient(made.client_id))?.webOrigins).toEqual(['https://edit.example.com']);
    expect((await put(spa)).statusCode).toBe(200);
    expect((await t.store.findClient(made.client_id))?.webOrigins).toEqual([]);
  });
});

describe("web origins on the admin console's client page", () => {
  async function admin(): Promise<Browser> {
    await addUser(t.store, 'root', 'root-password', { roles: ['admin'] });
    const browser = new Browser(injectTransport(t.app));
    const res = await signIn(browser, await browser.get('/login?fresh=1&return_to=%2Fadmin'), 'root', 'root-password');
    expect(res.status).toBe(303);
    return browser;
  }

  async function save(browser: Browser, fields: Record<string, string>, csrf?: string) {
    const page = await browser.get('/admin/clients/photos');
    return browser.post('/admin/clients/photos/update', {
      csrf_token: csrf ?? inputValue(page.body, 'csrf_token')!,
      name: 'Photos',
      redirect_uris: 'https://photos.example.com/cb',
      post_logout_redirect_uris: '',
      ...fields,
    });
  }

  it('are shown and edited one per line, stored in their serialised form, audited as changed', async () => {
    await addClient(t.store, 'photos', {
      name: 'Photos',
      redirectUris: ['https://photos.example.com/cb'],
      grantTypes: ['authorization_code'],
      webOrigins: ['https://old.example.com'],
    });
    const browser = await admin();
    const page = await browser.get('/admin/clients/photos');
    expect(page.status).toBe(200);
    expect(page.body).toContain('<textarea id="web_origins" name="web_origins"');
    expect(decodeEntities(page.body)).toContain('https://old.example.com');
    // A public client with a web origin is a browser application: its sign-ins' limit is shown.
    expect(decodeEntities(page.body.replace(/<[^>]+>/g, ''))).toContain('refresh tokens end 1 day after it');
    const res = await save(browser, { web_origins: 'HTTPS://Photos.Example.com:443\r\nhttp://localhost:5173\n\nhttps://photos.example.com' });
    expect(res.status, res.body.slice(0, 300)).toBe(303);
    expect(res.location).toBe('/admin/clients/photos?done=updated');
    expect((await t.store.findClient('photos'))?.webOrigins).toEqual(['https://photos.example.com', 'http://localhost:5173']);
    await t.app.services.auditTrail.flush();
    const [event] = await t.store.listAuditEvents({ event: 'client.updated', limit: 1 });
    expect(event).toMatchObject({ actor: 'root', clientId: 'photos', details: expect.objectContaining({ changed: ['webOrigins'] }) });
    // Emptied, the client has none.
    expect((await save(browser, { web_origins: '' })).status).toBe(303);
    expect((await t.store.findClient('photos'))?.webOrigins).toEqual([]);
  });

  it('a form without the field leaves them as they are', async () => {
    await addClient(t.store, 'photos', {
      name: 'Photos',
      redirectUris: ['https://photos.example.com/cb'],
      grantTypes: ['authorization_code'],
      webOrigins: ['https://keep.example.com'],
    });
    const browser = await admin();
    expect((await save(browser, { name: 'Renamed' })).status).toBe(303);
    expect(await t.store.findClient('photos')).toMatchObject({ name: 'Renamed', webOrigins: ['https://keep.example.com'] });
  });

  it('an invalid origin is refused with the page, what was typed shown again, nothing stored', async () => {
    await addClient(t.store, 'photos', { name: 'Photos', redirectUris: ['https://photos.example.com/cb'], grantTypes: ['authorization_code'] });
    const browser = await admin();
    for (const web_origins of ['https://photos.example.com/app', 'https://*.example.com', 'http://photos.example.com', 'photos.example.com']) {
      const refused = await save(browser, { web_origins });
      expect(refused.status, web_origins).toBe(400);
      expect(refused.body).toContain('id="edit-error"');
      expect(decodeEntities(refused.body)).toContain(web_origins);
    }
    expect((await t.store.findClient('photos'))?.webOrigins).toEqual([]);
  });

  it('a form without its CSRF token changes nothing', async () => {
    await addClient(t.store, 'photos', { name: 'Photos', redirectUris: ['https://photos.example.com/cb'], grantTypes: ['authorization_code'] });
    const browser = await admin();
    const forged = await save(browser, { web_origins: 'https://evil.example' }, 'forged');
    expect(forged.status).toBe(403);
    expect((await t.store.findClient('photos'))?.webOrigins).toEqual([]);
  });
});

describe('latchkey clients add --web-origin', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'latchkey-web-origins-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Runs `latchkey <args>` through the executable's entry point, in this process, on the test's database file. */
  async function latchkey(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let out = '';
    let err = '';
    stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const code = await main(args, { stdout, stderr, stdin: new PassThrough(), env: { LATCHKEY_DB: join(dir, 'latchkey.db') } });
    return { code, stdout: out, stderr: err };
  }

  it('is repeatable; each origin is stored once in its serialised form, shown by clients list (text and --json), and answered by CORS', async () => {
    const added = await latchkey([
      'clients',
      'add',
      'photos-web',
      '--redirect-uri',
      'https://photos.example.com/callback',
      '--web-origin',
      'HTTPS://Photos.Example.com:443',
      '--web-origin',
      'http://localhost:5173',
      '--web-origin',
      'https://photos.example.com',
    ]);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stderr).toContain('web origins: https://photos.example.com http://localhost:5173');
    const listed = JSON.parse((await latchkey(['clients', 'list', '--json'])).stdout) as { client_id: string; web_origins: string[] }[];
    expect(listed.find((c) => c.client_id === 'photos-web')?.web_origins).toEqual(['https://photos.example.com', 'http://localhost:5173']);
    const text = (await latchkey(['clients', 'list'])).stdout;
    expect(text.split('\n')[0]).toMatch(/REDIRECT_URIS\s+WEB_ORIGINS$/);
    expect(text).toMatch(/photos-web .*https:\/\/photos\.example\.com\/callback\s+https:\/\/photos\.example\.com http:\/\/localhost:5173\n/);

    const server = await testApp({}, { path: join(dir, 'latchkey.db') });
    try {
      const preflight = await server.app.inject({
        method: 'OPTIONS',
        url: '/oauth/token',
        headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'POST' },
      });
      expect(preflight.headers['access-control-allow-origin']).toBe('http://localhost:5173');
    } finally {
      await server.close();
    }
  });

  it.each([
    ['https://photos.example.com/', /has a path, query or fragment/],
    ['https://*.example.com', /wildcard/],
    ['http://photos.example.com', /plain http to a host that is not loopback/],
    ['https://me@photos.example.com', /user name or password/],
    ['photos.example.com', /is not a web origin/],
  ])('refuses %s with a clear message (exit 2), registering nothing', async (origin, message) => {
    const res = await latchkey(['clients', 'add', 'photos-web', '--web-origin', 'https://ok.example.com', '--web-origin', origin]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(message);
    const listed = JSON.parse((await latchkey(['clients', 'list', '--json'])).stdout) as { client_id: string }[];
    expect(listed.map((c) => c.client_id)).not.toContain('photos-web');
  });

  it('warns that a confidential client is seldom a browser application', async () => {
    const res = await latchkey(['clients', 'add', 'portal', '--confidential', '--web-origin', 'https://portal.example.com']);
    expect(res.code).toBe(0);
    expect(res.stderr).toContain('warning: code in a browser cannot keep a client secret');
  });
});
