/**
 * The management API's client operations beyond create/read/update/delete, through app.inject:
 * grants as their own sub-resource, disabling and enabling (with the effect on live tokens), the
 * initial access token for dynamic registration, and the list's filters. Every answer is checked
 * against the served OpenAPI document (helpers/management.ts).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/crypto/secrets.js';
import { builtinCliClientId } from '../../src/bootstrap.js';
import { testApp, type TestApp } from '../helpers/app.js';
import { managementHarness } from '../helpers/management.js';

let t: TestApp;
let logLines: string[];
let api: Awaited<ReturnType<typeof managementHarness>>;
const reports = 'https://reports.example.com';
const reportsPath = encodeURIComponent(reports);

beforeEach(async () => {
  logLines = [];
  t = await testApp({}, { logLines });
  api = await managementHarness(t);
  expect((await api.call('POST', '/api/v1/apis', { body: { identifier: reports, scopes: ['read:reports', 'write:reports'] } })).statusCode).toBe(201);
  expect(
    (await api.call('POST', '/api/v1/clients', { body: { client_id: 'nightly', confidential: true, grant_types: ['client_credentials'] } })).statusCode,
  ).toBe(201);
});
afterEach(async () => {
  // Each test's answers were all validated; a test that checked none would prove nothing.
  expect(api.answers.checked).toBeGreaterThan(0);
  await t.close();
});

describe('management API: client grants', () => {
  it('PUT makes (201) then replaces (200) a grant for a URL-encoded API, GET lists it, DELETE takes it away', async () => {
    const made = await api.call('PUT', `/api/v1/clients/nightly/grants/${reportsPath}`, { body: { scopes: ['read:reports', 'read:reports'] } });
    expect(made.statusCode, made.body).toBe(201);
    expect(made.json()).toEqual({ api: reports, scopes: ['read:reports'] });
    const replaced = await api.call('PUT', `/api/v1/clients/nightly/grants/${reportsPath}`, {
      body: { scopes: ['write:reports'] },
      headers: { 'if-match': made.headers.etag as string },
    });
    expect(replaced.statusCode, replaced.body).toBe(200);
    expect(await t.store.findClientGrant('nightly', reports)).toMatchObject({ scopes: ['write:reports'] });
    const listed = await api.call('GET', '/api/v1/clients/nightly/grants');
    expect(listed.json()).toEqual({ data: [{ api: reports, scopes: ['write:reports'] }], next: null });
    // The old ETag no longer matches: the grant changed since.
    const stale = await api.call('DELETE', `/api/v1/clients/nightly/grants/${reportsPath}`, { headers: { 'if-match': made.headers.etag as string } });
    expect(stale.statusCode).toBe(412);
    expect((await api.call('DELETE', `/api/v1/clients/nightly/grants/${reportsPath}`)).statusCode).toBe(204);
    expect(await t.store.findClientGrant('nightly', reports)).toBeUndefined();
    expect((await api.call('DELETE', `/api/v1/clients/nightly/grants/${reportsPath}`)).statusCode).toBe(404);
  });

  it('checks as clients grant does: undeclared or malformed scopes are 400 with field paths, an unknown API or client is 404', async () => {
    const undeclared = await api.call('PUT', `/api/v1/clients/nightly/grants/${reportsPath}`, { body: { scopes: ['read:reports', 'admin', 'bad scope'] } });
    expect(undeclared.statusCode).toBe(400);
    expect(undeclared.json().errors.map((e: { path: string }) => e.path)).toEqual(['/scopes/1', '/scopes/2']);
    const none = await api.call('PUT', `/api/v1/clients/nightly/grants/${reportsPath}`, { body: { scopes: [] } });
    expect(none.statusCode).toBe(400);
    expect(none.json().errors[0].path).toBe('/scopes');
    expect(
      (await api.call('PUT', `/api/v1/clients/nightly/grants/${encodeURIComponent('https://nope.example')}`, { body: { scopes: ['x'] } })).statusCode,
    ).toBe(404);
    expect((await api.call('PUT', `/api/v1/clients/ghost/grants/${reportsPath}`, { body: { scopes: ['read:reports'] } })).statusCode).toBe(404);
    expect((await api.call('GET', '/api/v1/clients/ghost/grants')).statusCode).toBe(404);
    // If-Match on a grant that does not exist yet has nothing to match (RFC 9110 §13.1.1).
    const unmatched = await api.call('PUT', `/api/v1/clients/nightly/grants/${reportsPath}`, {
      body: { scopes: ['read:reports'] },
      headers: { 'if-match': '*' },
    });
    expect(unmatched.statusCode).toBe(412);
    expect(await t.store.listClientGrants('nightly')).toEqual([]);
  });

  it('a managed client is refused with 409 naming the file, and a reader without write:clients gets 403', async () => {
    await t.store.setManagedBy('client', 'nightly', '/etc/latchkey/config.yaml');
    const put = await api.call('PUT', `/api/v1/clients/nightly/grants/${reportsPath}`, { body: { scopes: ['read:reports'] } });
    expect(put.statusCode).toBe(409);
    expect(put.json().detail).toContain('/etc/latchkey/config.yaml');
    const reader = await api.tokenFor('reader', ['read:clients']);
    expect((await api.call('GET', '/api/v1/clients/nightly/grants', { as: reader })).statusCode).toBe(200);
    expect((await api.call('DELETE', `/api/v1/clients/nightly/grants/${reportsPath}`, { as: reader })).statusCode).toBe(403);
  });
});

describe('management API: disabling a client', () => {
  it('PATCH disabled: true stops its live tokens at once; disabled: false lets it get new ones', async () => {
    const automation = await api.tokenFor('automation', ['read:clients']);
    expect((await api.call('GET', '/api/v1/clients/nightly', { as: automation })).statusCode).toBe(200);
    const disabled = await api.call('PATCH', '/api/v1/clients/automation', { body: { disabled: true } });
    expect(disabled.statusCode, disabled.body).toBe(200);
    expect(disabled.json().disabled).toBe(true);
    expect((await api.call('GET', '/api/v1/clients/nightly', { as: automation })).statusCode).toBe(401);
    const enabled = await api.call('PATCH', '/api/v1/clients/automation', { body: { disabled: false } });
    expect(enabled.json().disabled).toBe(false);
    expect((await t.store.findClient('automation'))?.disabled).toBe(false);
    const events = logLines.map((line) => (JSON.parse(line) as { event?: string }).event);
    expect(events).toEqual(expect.arrayContaining(['client.disabled', 'client.enabled']));
  });

  it('the built-in client cannot be disabled (409 built-in), nor a managed one (409)', async () => {
    const builtIn = await api.call('PATCH', `/api/v1/clients/${builtinCliClientId}`, { body: { disabled: true } });
    expect(builtIn.statusCode).toBe(409);
    expect(builtIn.json().type).toContain('built-in');
    await t.store.setManagedBy('client', 'nightly', '/etc/latchkey/config.yaml');
    expect((await api.call('PATCH', '/api/v1/clients/nightly', { body: { disabled: true } })).statusCode).toBe(409);
    expect((await t.store.findClient('nightly'))?.disabled).toBe(false);
    expect((await t.store.findClient(builtinCliClientId))?.disabled).toBe(false);
  });
});

describe('management API: rotating a secret for client_secret_jwt', () => {
  it('client_secret_jwt: true keeps the new secret sealed too, as --client-secret-jwt does; without it only a digest is kept', async () => {
    const plain = await api.call('POST', '/api/v1/clients/nightly/rotate-secret', { body: { keep_old_for: 0 } });
    expect(plain.statusCode, plain.body).toBe(200);
    expect((await t.store.findClient('nightly'))?.secretSealed).toBeUndefined();
    const sealed = await api.call('POST', '/api/v1/clients/nightly/rotate-secret', { body: { client_secret_jwt: true } });
    expect(sealed.statusCode, sealed.body).toBe(200);
    const stored = await t.store.findClient('nightly');
    expect(stored?.secretHash).toBe(sha256(sealed.json().client_secret));
    expect(stored?.secretSealed).toBeDefined();
    expect(stored?.secretSealed).not.toContain(sealed.json().client_secret);
  });
});

describe('management API: registration tokens and list filters', () => {
  it('POST /clients/registration-tokens answers the token once, stored as a digest, and it registers a client at /oauth/register', async () => {
    const made = await api.call('POST', '/api/v1/clients/registration-tokens', { body: { expires_in: 600 } });
    expect(made.statusCode, made.body).toBe(201);
    const { token, expires_at: expiresAt, registration_endpoint: endpoint } = made.json();
    expect(endpoint).toBe(`${t.config.issuer}/oauth/register`);
    const stored = await t.store.findRegistrationToken(sha256(token));
    expect(stored).toBeDefined();
    expect(new Date(expiresAt).getTime() / 1000).toBe(stored!.expiresAt);
    const registered = await t.app.inject({
      method: 'POST',
      url: '/oauth/register',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ client_name: 'Dynamic', redirect_uris: ['https://dyn.example.com/cb'] }),
    });
    expect(registered.statusCode, registered.body).toBe(201);
    // Never in the audit log or any log line.
    expect(logLines.some((line) => line.includes('client.registration_token_created'))).toBe(true);
    expect(logLines.join('\n')).not.toContain(token);
    const tooLong = await api.call('POST', '/api/v1/clients/registration-tokens', { body: { expires_in: 31 * 86400 } });
    expect(tooLong.statusCode).toBe(400);
    expect(tooLong.json().errors[0].path).toBe('/expires_in');
  });

  it('GET /clients filters by grant_type and confidential, and the view carries what clients list prints', async () => {
    expect((await api.call('POST', '/api/v1/clients', { body: { client_id: 'spa', redirect_uris: ['https://spa.example.com/cb'] } })).statusCode).toBe(201);
    const machines = await api.call('GET', '/api/v1/clients?grant_type=client_credentials&limit=200');
    const ids = machines.json().data.map((c: { client_id: string }) => c.client_id);
    expect(ids).toContain('nightly');
    expect(ids).not.toContain('spa');
    const publicOnes = await api.call('GET', '/api/v1/clients?confidential=false&limit=200');
    const publicIds = publicOnes.json().data.map((c: { client_id: string }) => c.client_id);
    expect(publicIds).toContain('spa');
    expect(publicIds).not.toContain('nightly');
    expect(publicOnes.json().data.find((c: { client_id: string }) => c.client_id === 'spa')).toMatchObject({
      authentication: 'none',
      registered: false,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
    });
    expect((await api.call('GET', '/api/v1/clients?grant_type=password')).statusCode).toBe(400);
  });
});
