/**
 * Every request has an id that an operator can look for: an error page shows it, the
 * `X-Request-Id` response header carries it, and so does the request's log line (`reqId`). An
 * incoming `X-Request-Id` is kept only from a proxy the server trusts, and only when it is a short
 * id of plain characters; anything else gets a fresh id.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { addUser, testApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
const lines: string[] = [];
afterEach(() => t?.close());

async function setUp(env: Record<string, string> = {}) {
  lines.length = 0;
  t = await testApp(env, { logLines: lines });
  await addUser(t.store, 'alice', 'alice-password');
}

/** The request log line (the access log's one line per request) of the request with this id. */
function logLineOf(id: string): Record<string, unknown> | undefined {
  return lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.reqId === id && l.msg === 'request');
}

/** The id an error page shows. */
const shownId = (html: string) => html.match(/<p class="hint request-id">[^<]*<code>([^<]+)<\/code><\/p>/)?.[1];

describe('request ids', () => {
  it('an error page shows the request id; the X-Request-Id header and the log line carry the same', async () => {
    await setUp();
    const res = await t.app.inject({ method: 'GET', url: '/no-such-page', headers: { accept: 'text/html' } });
    expect(res.statusCode).toBe(404);
    const id = res.headers['x-request-id'];
    expect(typeof id).toBe('string');
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(shownId(res.body)).toBe(id);
    expect(res.body).toContain('Reference for your administrator:');
    await t.app.close(); // the log is written in batches: closing flushes it
    expect(logLineOf(id as string)).toMatchObject({ reqId: id, method: 'GET', url: '/no-such-page', status: 404 });
  });

  it('every error page has it: a refused form, a malformed request', async () => {
    await setUp();
    const forged = await t.app.inject({
      method: 'POST',
      url: '/activate',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
      payload: 'user_code=BCDF-GHJK&csrf_token=forged',
    });
    expect(forged.statusCode).toBe(403);
    expect(shownId(forged.body)).toBe(forged.headers['x-request-id']);
    const malformed = await t.app.inject({ method: 'GET', url: `/activate?user_code=a&user_code=b`, headers: { accept: 'text/html' } });
    expect(malformed.statusCode).toBe(400);
    expect(shownId(malformed.body)).toBe(malformed.headers['x-request-id']);
  });

  it('each request gets its own id, JSON answers included', async () => {
    await setUp();
    const ids = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'grant_type=nope',
      });
      expect(res.statusCode).toBe(400);
      ids.add(String(res.headers['x-request-id']));
    }
    expect(ids.size).toBe(5);
  });

  it('an incoming X-Request-Id is ignored when no proxy is trusted (anyone could send one)', async () => {
    await setUp();
    const res = await t.app.inject({ method: 'GET', url: '/no-such-page', headers: { accept: 'text/html', 'x-request-id': 'abcdef0123456789' } });
    expect(res.headers['x-request-id']).not.toBe('abcdef0123456789');
    expect(shownId(res.body)).toBe(res.headers['x-request-id']);
  });

  it("behind a trusted proxy, the proxy's sane id is kept — and anything else replaced", async () => {
    await setUp({ LATCHKEY_TRUST_PROXY: '1' });
    const kept = await t.app.inject({
      method: 'GET',
      url: '/no-such-page',
      headers: { accept: 'text/html', 'x-request-id': '7f3a9c2e5b1d4f60a8e2c4b6d8f0a1c3' },
    });
    expect(kept.headers['x-request-id']).toBe('7f3a9c2e5b1d4f60a8e2c4b6d8f0a1c3');
    expect(shownId(kept.body)).toBe('7f3a9c2e5b1d4f60a8e2c4b6d8f0a1c3');
    for (const hostile of ['<script>alert(1)</script>', 'a b c d e f g h', 'short', 'x'.repeat(65), 'id x-evil: 1', '../../etc/passwd']) {
      const res = await t.app.inject({ method: 'GET', url: '/no-such-page', headers: { accept: 'text/html', 'x-request-id': hostile } });
      expect(res.statusCode, hostile).toBe(404);
      expect(res.headers['x-request-id'], hostile).not.toBe(hostile);
      expect(res.headers['x-request-id'], hostile).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.body, hostile).not.toContain(hostile.replace(/</g, '&lt;'));
    }
  });
});
