/**
 * Property-based hostility (fast-check): random and malicious form bodies, headers and query
 * strings at every endpoint. Never a 5xx; API errors are always the RFC 6749 §5.2 shape; pages
 * answer HTML; redirects only ever go to a registered redirect URI; and the server keeps serving.
 * Bounded so the suite stays fast: a few hundred requests per endpoint.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { addApi, addClient, addUser, testApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT: 'off', LATCHKEY_RATE_LIMIT_SIGNIN_ADDRESS: 'off' });
  await addUser(t.store, 'alice', 'alice-password');
  await addApi(t.store, 'https://api.example.com');
  await addClient(t.store, 'tv');
  await addClient(t.store, 'web', { redirectUris: ['https://app.example.com/cb'], grantTypes: ['authorization_code', 'refresh_token'], confidential: true });
});
afterAll(() => t.close());

const fieldNames = [
  'client_id',
  'client_secret',
  'grant_type',
  'device_code',
  'code',
  'redirect_uri',
  'code_verifier',
  'refresh_token',
  'scope',
  'audience',
  'resource',
  'token',
  'token_type_hint',
  'user_code',
  'csrf_token',
  'decision',
  'username',
  'password',
  'return_to',
  'interaction',
  'access_token',
  'response_type',
  'state',
  'nonce',
  'code_challenge',
  'code_challenge_method',
  'prompt',
  'max_age',
  'request',
  'request_uri',
  '__proto__',
  'constructor',
  'toString',
];
const knownValues = [
  'tv',
  'web',
  'latchkey-cli',
  'authorization_code',
  'refresh_token',
  'urn:ietf:params:oauth:grant-type:device_code',
  'openid',
  'openid email profile offline_access',
  'https://api.example.com',
  'https://app.example.com/cb',
  'http://127.0.0.1:1/callback',
  'code',
  'S256',
  'plain',
  'none',
  'login',
  'allow',
  'deny',
  'lk_dc_x',
  'lk_rt_x',
  'lk_ac_x',
  'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.',
  'BCDF-GHJK',
  'urn:ietf:params:oauth:request_uri:',
  `urn:ietf:params:oauth:request_uri:${'A'.repeat(43)}`,
  '',
  ' ',
  '%',
  '%00',
  '\u0000',
  '\r\n',
  '../..',
  '//evil.example',
];
const hostileString = fc.oneof(
  fc.constantFrom(...knownValues),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ maxLength: 3000 }).map((s) => s.repeat(2)),
);
// Now and then a value goes in raw (unencoded): stray '&', '=', '%' and control bytes included.
const formBody = fc
  .array(fc.tuple(fc.oneof(fc.constantFrom(...fieldNames), fc.string({ maxLength: 12 })), hostileString, fc.boolean()), { maxLength: 8 })
  .map((pairs) => pairs.map(([k, v, raw]) => `${encodeURIComponent(k)}=${raw ? v : encodeURIComponent(v)}`).join('&'));
const contentType = fc.constantFrom(
  'application/x-www-form-urlencoded',
  'application/x-www-form-urlencoded; charset=utf-8',
  'application/json',
  'text/plain',
  'multipart/form-data; boundary=x',
  'application/x-www-form-urlencoded; charset=latin1',
);
const headerValue = fc.oneof(
  fc.constantFrom('Basic ' + Buffer.from('web:wrong').toString('base64'), 'Basic', 'Basic ???', 'Bearer', 'Bearer x.y.z', 'bearer ' + 'a'.repeat(3000)),
  fc.string({ maxLength: 60 }).filter((s) => /^[\x20-\x7e]*$/.test(s)),
);
const extraHeaders = fc.record(
  {
    authorization: headerValue,
    cookie: headerValue.map((v) => `latchkey_session=${v.replace(/[;,\s]/g, '')}; latchkey_csrf=${v.replace(/[;,\s]/g, '')}`),
    'x-forwarded-for': headerValue,
    accept: fc.constantFrom('text/html', 'application/json', '*/*'),
  },
  { requiredKeys: [] },
);

const apiPosts = ['/oauth/device/code', '/oauth/token', '/oauth/par', '/oauth/revoke', '/oauth/introspect', '/userinfo'];
const pagePosts = ['/login', '/activate', '/activate/confirm', '/authorize/decision', '/logout'];
const gets = [
  '/authorize',
  '/authorize/continue',
  '/activate',
  '/activate/confirm',
  '/login',
  '/logout',
  '/userinfo',
  '/.well-known/openid-configuration',
  '/healthz',
];

let requestsChecked = 0;

/** RFC 6749 §4.1.2.1: %x20-21 / %x23-5B / %x5D-7E, and never an echo of the request. */
const allowedDescription = /^[\x20\x21\x23-\x5B\x5D-\x7E]*$/;

function expectWellFormed(url: string, res: { statusCode: number; headers: Record<string, unknown>; body: string }) {
  requestsChecked++;
  expect(res.statusCode).toBeLessThan(500);
  expect(res.body).not.toMatch(/at [\w.<>]+ \(.*:\d+:\d+\)/); // no stack trace
  if (res.statusCode >= 300 && res.statusCode < 400) {
    const location = String(res.headers.location);
    expect(location.startsWith('/') || location.startsWith('https://app.example.com/cb?') || /^http:\/\/127\.0\.0\.1(:\d+)?\/callback\?/.test(location)).toBe(
      true,
    );
    const description = location.startsWith('/') ? null : new URL(location).searchParams.get('error_description');
    if (description !== null) expect(description).toMatch(allowedDescription);
    return;
  }
  if (res.statusCode >= 400) {
    if (String(res.headers['content-type']).startsWith('application/json')) {
      const body = JSON.parse(res.body);
      expect(typeof body.error).toBe('string');
      expect(typeof body.error_description).toBe('string');
      expect(body.error_description).toMatch(allowedDescription);
    } else {
      expect(String(res.headers['content-type'])).toMatch(/^text\/html/);
      expect(pagePosts.includes(url) || gets.includes(url)).toBe(true);
    }
  }
}

describe('fuzzing every endpoint (fast-check)', () => {
  for (const url of [...apiPosts, ...pagePosts]) {
    it(`POST ${url}: hostile bodies and headers never make a 5xx`, async () => {
      await fc.assert(
        fc.asyncProperty(formBody, contentType, extraHeaders, async (payload, type, headers) => {
          const res = await t.app.inject({ method: 'POST', url, payload, headers: { ...headers, 'content-type': type } });
          expectWellFormed(url, res);
        }),
        { numRuns: 150 },
      );
    });
  }

  for (const url of gets) {
    it(`GET ${url}: hostile query strings and headers never make a 5xx`, async () => {
      await fc.assert(
        fc.asyncProperty(formBody, extraHeaders, async (query, headers) => {
          const res = await t.app.inject({ method: 'GET', url: `${url}?${query}`, headers });
          expectWellFormed(url, res);
        }),
        { numRuns: 150 },
      );
    });
  }

  it('GET /authorize with a registered client and hostile everything else: a page or a redirect to that client only', async () => {
    await fc.assert(
      fc.asyncProperty(formBody, async (rest) => {
        const query = `client_id=web&redirect_uri=${encodeURIComponent('https://app.example.com/cb')}&${rest}`;
        const res = await t.app.inject({ method: 'GET', url: `/authorize?${query}` });
        expectWellFormed('/authorize', res);
      }),
      { numRuns: 300 },
    );
  });

  it('the server keeps serving after all of it', async () => {
    expect(requestsChecked).toBe(150 * (apiPosts.length + pagePosts.length + gets.length) + 300);
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
  });
});
