/**
 * Refusals of the management API that come before or around an operation's own checks: each is an
 * RFC 9457 problem whose detail says which part of the request is wrong, whose field paths are JSON
 * Pointers (RFC 6901) to the offending field itself, and whose RFC 6750 challenge parses.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { testApp, type TestApp } from '../helpers/app.js';
import { managementHarness } from '../helpers/management.js';

let t: TestApp;
let api: Awaited<ReturnType<typeof managementHarness>>;

beforeEach(async () => {
  t = await testApp();
  api = await managementHarness(t);
});
afterEach(async () => {
  expect(api.answers.checked).toBeGreaterThan(0);
  await t.close();
});

describe('management API: the shape of refusals', () => {
  it('an unknown field is named by its own pointer, not by the object holding it', async () => {
    const res = await api.call('POST', '/api/v1/clients', { body: { client_id: 'bad', bogus: 1, also: true } });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual(
      expect.arrayContaining([
        { path: '/bogus', message: '"bogus" is not a field of this object' },
        { path: '/also', message: '"also" is not a field of this object' },
      ]),
    );
  });

  it('a bad query or path parameter says so, not "request body"', async () => {
    const query = await api.call('GET', '/api/v1/users?limit=0');
    expect(query.statusCode).toBe(400);
    expect(query.json()).toMatchObject({ detail: 'The query is not valid: see errors.', errors: [expect.objectContaining({ path: '/limit' })] });
    const path = await api.call('GET', '/api/v1/audit-events/abc');
    expect(path.statusCode).toBe(400);
    expect(path.json().detail).toBe('The path is not valid: see errors.');
  });

  it('a malformed Authorization header gets a challenge that parses and a readable detail', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/users', headers: { authorization: 'Bearer' } });
    api.answers.check({ method: 'GET', url: '/api/v1/users', statusCode: res.statusCode, headers: res.headers, body: res.body });
    expect(res.statusCode).toBe(400);
    const challenge = String(res.headers['www-authenticate']);
    // RFC 6750 §3: auth-params are quoted strings; no unescaped quote may sit inside one.
    expect(challenge).toMatch(/^Bearer( [a-z_]+="[^"\\]*",?)+$/);
    expect(res.json().detail).not.toContain('?');
  });

  it('a broken percent-encoding or an over-long path parameter is a problem, not an OAuth error body', async () => {
    for (const url of ['/api/v1/users/%E0%A4%A', '/api/v1/clients/%ZZ', `/api/v1/users/${'a'.repeat(5000)}`]) {
      const res = await t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${api.token}` } });
      expect(res.statusCode, url).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, url).toBeLessThan(500);
      expect(res.headers['content-type'], url).toMatch(/^application\/problem\+json/);
      expect(res.json(), url).toMatchObject({ status: res.statusCode, type: expect.stringMatching(/^\/docs\/management-api#/) });
      // What the document lists for the operation (a 400 is; the router's 414 for a path too long to route is not).
      if (res.statusCode === 400)
        api.answers.check({ method: 'GET', url: '/api/v1/users/x', statusCode: res.statusCode, headers: res.headers, body: res.body });
    }
    // Outside the API the same refusal keeps its OAuth body.
    const outside = await t.app.inject({ method: 'GET', url: '/userinfo/%E0%A4%A' });
    expect(outside.headers['content-type']).toMatch(/^application\/json/);
  });
});
