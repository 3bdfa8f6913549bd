/**
 * Malformed and hostile requests: every one gets a 4xx with an OAuth error body (API) or a page
 * (browser routes), never a 5xx or a stack trace, and the server keeps serving.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addClient, testApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeEach(async () => {
  t = await testApp();
  await addClient(t.store, 'tv');
});
afterEach(() => t.close());

const apiEndpoints = ['/oauth/token', '/oauth/device/code'];

type Case = { name: string; headers: Record<string, string>; payload: string | Buffer; status?: number };

const megabyte = 'a'.repeat(1024 * 1024);
const cases: Case[] = [
  { name: 'a JSON body', headers: { 'content-type': 'application/json' }, payload: '{"grant_type":"x","client_id":"tv"}' },
  { name: 'a text/plain body', headers: { 'content-type': 'text/plain' }, payload: 'client_id=tv' },
  { name: 'no content type', headers: {}, payload: 'client_id=tv' },
  { name: 'multipart', headers: { 'content-type': 'multipart/form-data; boundary=x' }, payload: '--x\r\n\r\n--x--' },
  { name: 'a 1 MB field', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: `client_id=${megabyte}`, status: 413 },
  {
    name: 'garbage bytes',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: Buffer.from([0xff, 0xfe, 0x25, 0x25, 0x00, 0x3d, 0xc3, 0x28]),
  },
  { name: 'broken percent-encoding', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'client_id=%E0%A4%A&grant_type=%' },
  { name: 'repeated parameters', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'client_id=tv&client_id=tv' },
  { name: 'an empty body', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: '' },
  {
    name: 'a huge client_id',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: `client_id=${'x'.repeat(5000)}&grant_type=urn:ietf:params:oauth:grant-type:device_code&device_code=x`,
  },
  { name: 'a key with no value', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'client_id&grant_type' },
];

describe('hostile bodies at the API endpoints', () => {
  for (const url of apiEndpoints) {
    for (const c of cases) {
      it(`${url}: ${c.name} → 4xx with an OAuth error body`, async () => {
        const res = await t.app.inject({ method: 'POST', url, headers: c.headers, payload: c.payload });
        expect(res.statusCode).toBeGreaterThanOrEqual(400);
        expect(res.statusCode).toBeLessThan(500);
        if (c.status) expect(res.statusCode).toBe(c.status);
        const body = res.json();
        expect(typeof body.error).toBe('string');
        expect(typeof body.error_description).toBe('string');
        expect(res.body).not.toMatch(/at .*\.(ts|js):\d+/); // no stack trace
        expect(res.headers['cache-control']).toBe('no-store');
      });
    }
  }

  it('__proto__ and constructor parameters are ignored like any unknown parameter (RFC 6749 §3.1), polluting nothing', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/oauth/device/code',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: '__proto__=polluted&constructor=y&toString=z&client_id=tv',
    });
    expect(res.statusCode).toBe(200);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype.toString.call([])).toBe('[object Array]');
  });

  it('a JSON body is refused with invalid_request, not parsed', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/oauth/device/code',
      headers: { 'content-type': 'application/json' },
      payload: '{"client_id":"tv"}',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid_request', error_description: 'The request body must be application/x-www-form-urlencoded.' });
  });

  for (const url of apiEndpoints) {
    for (const method of ['GET', 'PUT', 'DELETE', 'PATCH'] as const) {
      it(`${method} ${url} → 405 with Allow: POST and an OAuth error body`, async () => {
        const res = await t.app.inject({ method, url });
        expect(res.statusCode).toBe(405);
        expect(res.headers.allow).toBe('POST');
        expect(res.json()).toEqual({ error: 'invalid_request', error_description: `Use POST for ${url}.` });
      });
    }
  }

  it('a malformed URL → 400 with an OAuth error body', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/%' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_request');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
  });

  it('the server keeps serving afterwards', async () => {
    for (const c of cases) await t.app.inject({ method: 'POST', url: '/oauth/token', headers: c.headers, payload: c.payload });
    const res = await t.app.inject({
      method: 'POST',
      url: '/oauth/device/code',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'client_id=tv',
    });
    expect(res.statusCode).toBe(200);
  });
});

describe("error_description never carries the sender's text (RFC 6749 §4.1.2.1)", () => {
  const allowed = /^[\x20\x21\x23-\x5B\x5D-\x7E]*$/;
  const hostileName = encodeURIComponent('"<img src=x>é\\');

  it('a repeated parameter with a hostile name at the API endpoints', async () => {
    for (const url of apiEndpoints) {
      const payload = `client_id=tv&${hostileName}=1&${hostileName}=2`;
      const res = await t.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'invalid_request', error_description: 'A parameter is repeated.' });
    }
  });

  it('an unsupported scope is not quoted back', async () => {
    const payload = `client_id=tv&scope=${encodeURIComponent('openid <script>alert(1)</script>')}`;
    const res = await t.app.inject({ method: 'POST', url: '/oauth/device/code', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload });
    expect(res.json()).toEqual({ error: 'invalid_scope', error_description: 'A requested scope is not supported.' });
  });

  it('the authorization error redirect carries only allowed characters and no request text', async () => {
    await addClient(t.store, 'web', { redirectUris: ['https://app.example.com/cb'], grantTypes: ['authorization_code'] });
    const query = `client_id=web&redirect_uri=${encodeURIComponent('https://app.example.com/cb')}&response_type=code&state=s&${hostileName}=1&${hostileName}=2`;
    const res = await t.app.inject({ method: 'GET', url: `/authorize?${query}` });
    expect(res.statusCode).toBe(302);
    const description = new URL(res.headers.location!).searchParams.get('error_description')!;
    expect(description).toBe('A parameter is repeated.');
    const scoped = await t.app.inject({
      method: 'GET',
      url: `/authorize?client_id=web&redirect_uri=${encodeURIComponent('https://app.example.com/cb')}&response_type=code&state=s&scope=${encodeURIComponent('openid "é<b>')}`,
    });
    const scopedDescription = new URL(scoped.headers.location!).searchParams.get('error_description')!;
    expect(scopedDescription).toMatch(allowed);
    expect(scopedDescription).not.toContain('<b>');
  });

  it("zod's own messages (with < and =) never reach the client", async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/oauth/revoke',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `client_id=tv&token=x&token_type_hint=${'h'.repeat(100)}`,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error_description).toMatch(allowed);
    expect(res.json().error_description).not.toMatch(/[<=]/);
  });
});

describe('hostile requests to the pages', () => {
  const pages = ['/activate', '/activate/confirm', '/login', '/authorize/decision'];
  for (const url of pages) {
    for (const c of cases) {
      it(`POST ${url}: ${c.name} → 4xx page`, async () => {
        const res = await t.app.inject({ method: 'POST', url, headers: { ...c.headers, accept: 'text/html' }, payload: c.payload });
        expect(res.statusCode).toBeGreaterThanOrEqual(400);
        expect(res.statusCode).toBeLessThan(500);
        expect(res.headers['content-type']).toMatch(/^text\/html/);
        expect(res.body).not.toMatch(/at .*\.(ts|js):\d+/);
      });
    }
  }

  const authorizeQueries = [
    '',
    'client_id=%',
    'client_id[]=a&client_id[]=b',
    'client_id=latchkey-cli&redirect_uri=%FF%FE',
    'client_id=latchkey-cli&redirect_uri=http%3A%2F%2F127.0.0.1%3A99999%2Fcallback',
    'client_id=latchkey-cli&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcallback&state=%00&response_type=code',
    `client_id=latchkey-cli&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcallback&state=${'s'.repeat(5000)}`,
    'client_id=latchkey-cli&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcallback&response_type=code&state=x&code_challenge=%00&code_challenge_method=S256',
    'client_id=latchkey-cli&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcallback&response_type=code&state=x&max_age=99999999999999999999',
    'client_id=latchkey-cli&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcallback&response_type=code&state=x&scope=%E2%98%83',
    '__proto__[x]=1&client_id=latchkey-cli',
  ];
  for (const query of authorizeQueries) {
    it(`GET /authorize?${query.slice(0, 60)} → a page or a redirect, never 5xx`, async () => {
      const res = await t.app.inject({ method: 'GET', url: `/authorize?${query}` });
      expect(res.statusCode).toBeLessThan(500);
      if (res.statusCode >= 300 && res.statusCode < 400) {
        expect(res.headers.location).toMatch(/^http:\/\/127\.0\.0\.1(:\d+)?\/callback\?/);
      } else {
        expect(res.statusCode).toBe(400);
        expect(res.headers['content-type']).toMatch(/^text\/html/);
      }
    });
  }

  it('POST /logout never fails, whatever the body', async () => {
    for (const c of cases) {
      const res = await t.app.inject({ method: 'POST', url: '/logout', headers: { ...c.headers, accept: 'text/html' }, payload: c.payload });
      expect(res.statusCode).toBeLessThan(500);
    }
  });

  for (const query of ['user_code=%', 'user_code[]=x', 'user_code=a&user_code=b', `user_code=${'A'.repeat(5000)}`, 'return_to=%00']) {
    it(`GET /activate?${query.slice(0, 30)} never fails with 5xx`, async () => {
      const res = await t.app.inject({ method: 'GET', url: `/activate?${query}` });
      expect(res.statusCode).toBeLessThan(500);
    });
    it(`GET /login?${query.slice(0, 30)} never fails with 5xx`, async () => {
      const res = await t.app.inject({ method: 'GET', url: `/login?${query}` });
      expect(res.statusCode).toBeLessThan(500);
    });
  }
});
