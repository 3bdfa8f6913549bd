/**
 * The management API under /api/v1 through app.inject: the clients and apis resources, problem
 * details, cursor pagination, ETag / If-Match, managed objects, scopes, and the OpenAPI document.
 * Every answer is checked against the document the server serves (helpers/openapi_answers.ts).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/crypto/secrets.js';
import { testApp, type TestApp } from '../helpers/app.js';
import { addManagementClient, managementScopes, managementTokenRequest } from '../helpers/management.js';
import { OpenApiAnswers } from '../helpers/openapi_answers.js';

let t: TestApp;
let answers: OpenApiAnswers;
let token: string;

async function tokenFor(clientId: string, scopes: string[]): Promise<string> {
  const secret = await addManagementClient(t.store, t.config.issuer, clientId, scopes);
  const res = await t.app.inject({ method: 'POST', url: '/oauth/token', ...managementTokenRequest(t.config.issuer, clientId, secret, scopes) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ access_token: string }>().access_token;
}

/** One call, its answer checked against the served document. */
async function call(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, options: { body?: unknown; headers?: Record<string, string>; as?: string } = {}) {
  const headers: Record<string, string> = { authorization: `Bearer ${options.as ?? token}`, ...options.headers };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await t.app.inject({ method, url, headers, ...(options.body === undefined ? {} : { payload: JSON.stringify(options.body) }) });
  answers.check({ method, url, statusCode: res.statusCode, headers: res.headers, body: res.body });
  return res;
}

beforeEach(async () => {
  t = await testApp();
  token = await tokenFor('robot', managementScopes);
  const doc = await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
  expect(doc.statusCode).toBe(200);
  answers = new OpenApiAnswers(doc.json());
});
afterEach(async () => {
  // Each test's answers were all validated; a test that checked none would prove nothing.
  expect(answers.checked).toBeGreaterThan(0);
  await t.close();
});

describe('management API: clients', () => {
  it('registers a confidential client whose secret is answered once and works at the token endpoint, then reads, lists and removes it', async () => {
    const created = await call('POST', '/api/v1/clients', {
      body: { client_id: 'nightly', name: 'Nightly job', confidential: true, grant_types: ['client_credentials'] },
    });
    expect(created.statusCode, created.body).toBe(201);
    const body = created.json();
    expect(body).toMatchObject({ client_id: 'nightly', name: 'Nightly job', confidential: true, pkce: false, grants: [] });
    expect(body.client_secret).toMatch(/.{20,}/);
    expect(created.headers.location).toBe('/api/v1/clients/nightly');
    // Not for browsers: a cross-origin caller gets no CORS header, so its page cannot read the answer.
    const fromPage = await call('GET', '/api/v1/clients/nightly', { headers: { origin: 'https://app.example.com' } });
    expect(fromPage.statusCode).toBe(200);
    expect(fromPage.headers['access-control-allow-origin']).toBeUndefined();
    // Stored as a digest, never in the clear.
    expect((await t.store.findClient('nightly'))?.secretHash).toBe(sha256(body.client_secret));

    const read = await call('GET', '/api/v1/clients/nightly');
    expect(read.statusCode).toBe(200);
    expect(read.json().client_secret).toBeUndefined();
    expect(read.headers.etag).toBe(created.headers.etag);

    const rotated = await call('POST', '/api/v1/clients/nightly/rotate-secret');
    expect(rotated.statusCode, rotated.body).toBe(200);
    const secret = rotated.json().client_secret as string;
    expect(secret).not.toBe(body.client_secret);
    expect((await t.store.findClient('nightly'))?.secretHash).toBe(sha256(secret));

    const list = await call('GET', '/api/v1/clients?limit=200');
    expect(list.json().data.map((c: { client_id: string }) => c.client_id)).toContain('nightly');

    expect((await call('DELETE', '/api/v1/clients/nightly')).statusCode).toBe(204);
    expect((await call('GET', '/api/v1/clients/nightly')).statusCode).toBe(404);
  });

  it('a public client gets no secret and PKCE by default, and has no secret to rotate (409)', async () => {
    const created = await call('POST', '/api/v1/clients', { body: { client_id: 'spa', redirect_uris: ['https://app.example.com/cb'] } });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().client_secret).toBeUndefined();
    expect(created.json()).toMatchObject({ confidential: false, pkce: true, grant_types: ['authorization_code', 'refresh_token'] });
    const rotate = await call('POST', '/api/v1/clients/spa/rotate-secret');
    expect(rotate.statusCode).toBe(409);
    expect(rotate.json().detail).toMatch(/public/);
  });

  it('bad input is a 400 problem naming each field path, and nothing is stored', async () => {
    const res = await call('POST', '/api/v1/clients', {
      body: { client_id: 'bad id!', redirect_uris: ['javascript:alert(1)'], grant_types: ['client_credentials'], colour: 'red' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const problem = res.json<{ type: string; title: string; status: number; detail: string; errors: { path: string; message: string }[] }>();
    expect(problem).toMatchObject({ status: 400, title: 'Invalid request' });
    const paths = problem.errors.map((e) => e.path);
    expect(paths).toEqual(expect.arrayContaining(['/client_id', '/redirect_uris/0']));
    expect(problem.errors.some((e) => e.message.includes('colour'))).toBe(true);
    expect(await t.store.findClient('bad id!')).toBeUndefined();
  });

  it('a body that is not JSON, or a grant for an unknown API, is a 400 problem, not a 500', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/clients',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: '{"client_id":',
    });
    answers.check({ method: 'POST', url: '/api/v1/clients', statusCode: res.statusCode, headers: res.headers, body: res.body });
    expect(res.statusCode).toBe(400);
    const grant = await call('POST', '/api/v1/clients', {
      body: { client_id: 'job', confidential: true, grant_types: ['client_credentials'], grants: [{ api: 'https://nowhere.example', scopes: ['x'] }] },
    });
    expect(grant.statusCode).toBe(400);
    expect(grant.json().errors).toEqual([{ path: '/grants/0/api', message: 'no API "https://nowhere.example"' }]);
  });

  it('two PATCHes with the same ETag, sent together: one wins with 200, the other gets 412', async () => {
    await call('POST', '/api/v1/clients', { body: { client_id: 'tv', grant_types: ['device_code'] } });
    const etag = (await call('GET', '/api/v1/clients/tv')).headers.etag as string;
    expect(etag).toMatch(/^W\/"/);
    const [a, b] = await Promise.all([
      call('PATCH', '/api/v1/clients/tv', { body: { name: 'Kitchen TV' }, headers: { 'if-match': etag } }),
      call('PATCH', '/api/v1/clients/tv', { body: { name: 'Bedroom TV' }, headers: { 'if-match': etag } }),
    ]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([200, 412]);
    const winner = a.statusCode === 200 ? a : b;
    expect((await t.store.findClient('tv'))?.name).toBe(winner.json().name);
    expect(winner.headers.etag).not.toBe(etag);
    // Without If-Match the change is made (the caller chose not to guard it).
    expect((await call('PATCH', '/api/v1/clients/tv', { body: { first_party: true } })).statusCode).toBe(200);
  });

  it('a client managed by a configuration file is refused with a 409 problem naming the file', async () => {
    await call('POST', '/api/v1/clients', { body: { client_id: 'billing' } });
    await t.store.setManagedBy('client', 'billing', '/etc/latchkey/config.yaml');
    for (const [method, url, body] of [
      ['PATCH', '/api/v1/clients/billing', { name: 'x' }],
      ['DELETE', '/api/v1/clients/billing', undefined],
    ] as const) {
      const res = await call(method, url, body === undefined ? {} : { body });
      expect(res.statusCode).toBe(409);
      expect(res.json().detail).toContain('/etc/latchkey/config.yaml');
    }
    expect(await t.store.findClient('billing')).toMatchObject({ name: 'billing' });
  });

  it('pages of a list follow the cursor in client_id order without repeating or skipping', async () => {
    for (const id of ['c3', 'c1', 'c2', 'c4']) await call('POST', '/api/v1/clients', { body: { client_id: id } });
    const seen: string[] = [];
    let url = '/api/v1/clients?limit=2';
    for (;;) {
      const res = await call('GET', url);
      const { data, next } = res.json<{ data: { client_id: string }[]; next: string | null }>();
      expect(data.length).toBeLessThanOrEqual(2);
      seen.push(...data.map((c) => c.client_id));
      if (next === null) break;
      url = `/api/v1/clients?limit=2&cursor=${encodeURIComponent(next)}`;
    }
    expect(seen).toEqual([...seen].sort());
    expect(seen).toEqual(expect.arrayContaining(['c1', 'c2', 'c3', 'c4', 'robot']));
    expect(new Set(seen).size).toBe(seen.length);
    expect((await call('GET', '/api/v1/clients?cursor=%25%25')).statusCode).toBe(400);
  });
});

describe('management API: callers', () => {
  it('no token is 401, a token without the scope is 403 insufficient_scope with WWW-Authenticate (RFC 6750 §3.1)', async () => {
    const none = await t.app.inject({ method: 'GET', url: '/api/v1/clients' });
    answers.check({ method: 'GET', url: '/api/v1/clients', statusCode: none.statusCode, headers: none.headers, body: none.body });
    expect(none.statusCode).toBe(401);
    expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
    const reader = await tokenFor('reader', ['read:clients']);
    expect((await call('GET', '/api/v1/clients', { as: reader })).statusCode).toBe(200);
    const refused = await call('POST', '/api/v1/clients', { as: reader, body: { client_id: 'sneaky' } });
    expect(refused.statusCode).toBe(403);
    expect(refused.headers['www-authenticate']).toMatch(/error="insufficient_scope"/);
    expect(await t.store.findClient('sneaky')).toBeUndefined();
  });
});

describe('management API: apis', () => {
  it('declares, reads (URL-encoded identifier), changes with If-Match and removes an API', async () => {
    const id = 'https://reports.example.com';
    const path = `/api/v1/apis/${encodeURIComponent(id)}`;
    const created = await call('POST', '/api/v1/apis', { body: { identifier: id, name: 'Reports', scopes: ['read:reports'] } });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toEqual({ identifier: id, name: 'Reports', scopes: ['read:reports'], introspection_clients: [], created_at: expect.any(String) });
    expect((await call('POST', '/api/v1/apis', { body: { identifier: id } })).statusCode).toBe(409);
    const read = await call('GET', path);
    expect(read.statusCode).toBe(200);
    const patched = await call('PATCH', path, { body: { scopes: ['read:reports', 'write:reports'] }, headers: { 'if-match': read.headers.etag as string } });
    expect(patched.statusCode, patched.body).toBe(200);
    expect((await call('PATCH', path, { body: { name: 'Stale' }, headers: { 'if-match': read.headers.etag as string } })).statusCode).toBe(412);
    expect((await t.store.findApi(id))?.scopes).toEqual(['read:reports', 'write:reports']);
    const bad = await call('PATCH', path, { body: { scopes: ['bad scope'] } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors[0].path).toBe('/scopes');
    expect((await call('DELETE', path)).statusCode).toBe(204);
    expect((await call('GET', path)).statusCode).toBe(404);
  });

  it('a managed API is refused with 409 naming the file', async () => {
    const id = 'https://managed.example.com';
    await call('POST', '/api/v1/apis', { body: { identifier: id } });
    await t.store.setManagedBy('api', id, '/srv/latchkey.yaml');
    const res = await call('DELETE', `/api/v1/apis/${encodeURIComponent(id)}`);
    expect(res.statusCode).toBe(409);
    expect(res.json().detail).toContain('/srv/latchkey.yaml');
  });
});

describe('management API: OpenAPI document', () => {
  it('is public, OpenAPI 3.1, lists every operation with its scope, and unknown paths are problems', async () => {
    const doc = answers.document as { paths: Record<string, Record<string, { security: unknown[] }>> };
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/apis',
      '/apis/{identifier}',
      '/audit-events',
      '/audit-events/{id}',
      '/clients',
      '/clients/registration-tokens',
      '/clients/{client_id}',
      '/clients/{client_id}/grants',
      '/clients/{client_id}/grants/{api}',
      '/clients/{client_id}/rotate-secret',
      '/connectors',
      '/connectors/{id}',
      '/connectors/{id}/test',
      '/keys',
      '/keys/rotate',
      '/keys/{kid}',
      '/openapi.json',
      '/roles',
      '/roles/{name}',
      '/roles/{name}/members',
      '/sessions',
      '/sessions/{id}',
      '/users',
      '/users/{username}',
      '/users/{username}/identities/{connector}',
      '/users/{username}/mfa-enrollment',
      '/users/{username}/mfa-reset',
      '/users/{username}/revoke-tokens',
      '/users/{username}/roles/{role}',
    ]);
    expect(doc.paths['/clients']!.post!.security).toEqual([{ accessToken: ['write:clients'] }]);
    const missing = await t.app.inject({ method: 'GET', url: '/api/v1/nothing-here', headers: { authorization: `Bearer ${token}` } });
    expect(missing.statusCode).toBe(404);
    expect(missing.headers['content-type']).toMatch(/^application\/problem\+json/);
    answers.check({ method: 'GET', url: '/api/v1/openapi.json', statusCode: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(doc) });
  });
});
