/**
 * The loopback listener of `latchkey login` on a real local socket: its one-time start form (what
 * the sign-in page file posts, in place of any address on a command line that any local account
 * could read) is answered once with a redirect to the request, and presented twice it cancels the
 * sign-in.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { listenForCallback, SignInHijacked, type Callback, type CallbackListener, type StartForm } from '../../src/cli/client/loopback.js';

const authorizationUrl = 'https://id.example/authorize?client_id=latchkey-cli&state=the-state&nonce=n&code_challenge=c';
let listener: CallbackListener | undefined;
afterEach(() => listener?.close());

async function listen() {
  listener = await listenForCallback('the-state', 60_000, new AbortController().signal);
  // Watched from the start, so that a rejection is never unhandled.
  const outcome = listener.callback.then(
    (callback): { callback: Callback } => ({ callback }),
    (error: unknown): { error: unknown } => ({ error }),
  );
  return { listener, outcome };
}

const get = async (url: string, init: RequestInit = {}) => {
  const res = await fetch(url, { ...init, redirect: 'manual' });
  return { status: res.status, headers: res.headers, body: await res.text() };
};

/** What the sign-in page's form sends. */
const present = (form: StartForm, secret = form.secret) => get(form.action, { method: 'POST', body: new URLSearchParams({ t: secret }) });

const pending = Symbol('pending');
/**
 * The promise's outcome, or `pending`: asked once the answer to the request that could have settled
 * it has arrived (the listener settles before it answers), so one more turn of the event loop lets
 * whatever it queued run first.
 */
const settledYet = (promise: Promise<unknown>) => Promise.race([promise, new Promise((resolve) => setImmediate(() => resolve(pending)))]);

describe('the start form', () => {
  it('posts a fresh 256-bit secret to /start on the callback port, answered once with a 303 to the request', async () => {
    const { listener, outcome } = await listen();
    const start = listener.startForm(authorizationUrl);
    const port = new URL(listener.redirectUri).port;
    expect(start.action).toBe(`http://127.0.0.1:${port}/start`);
    expect(start.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(start.secret).not.toContain('the-state');

    const opened = await present(start);
    expect(opened.status).toBe(303);
    expect(opened.headers.get('location')).toBe(authorizationUrl);
    expect(opened.headers.get('cache-control')).toBe('no-store');
    expect(opened.headers.get('referrer-policy')).toBe('no-referrer');
    expect(opened.headers.get('connection')).toBe('close');
    expect(await settledYet(outcome)).toBe(pending);

    const answer = fetch(`${listener.redirectUri}?code=c&state=the-state`);
    const result = await outcome;
    expect('callback' in result && result.callback.url.searchParams.get('code')).toBe('c');
    if ('callback' in result) result.callback.finish(true);
    expect((await answer).status).toBe(200);
  });

  it('presented a second time answers 400, rejects the callback with SignInHijacked, and refuses every callback after', async () => {
    const { listener, outcome } = await listen();
    const start = listener.startForm(authorizationUrl);
    expect((await present(start)).status).toBe(303);
    const again = await present(start);
    expect(again.status).toBe(400);
    expect(again.headers.get('location')).toBeNull();
    expect(again.headers.get('cache-control')).toBe('no-store');
    expect(again.body).toContain('Sign-in cancelled');
    expect(again.body).toContain('opened twice');
    const result = await outcome;
    expect('error' in result && result.error).toBeInstanceOf(SignInHijacked);

    const late = await get(`${listener.redirectUri}?code=c&state=the-state`);
    expect(late.status).toBe(400);
    expect(late.body).toContain('Sign-in cancelled');
    expect((await present(start)).status).toBe(400);
  });

  it('presented a second time while the code is being redeemed: openedTwice() tells the caller not to store', async () => {
    const { listener, outcome } = await listen();
    const start = listener.startForm(authorizationUrl);
    expect((await present(start)).status).toBe(303);
    const answer = fetch(`${listener.redirectUri}?code=c&state=the-state`);
    const result = await outcome;
    expect('callback' in result).toBe(true);
    expect(listener.openedTwice()).toBe(false);
    const again = await present(start);
    expect(again.status).toBe(400);
    expect(again.body).toContain('Sign-in cancelled');
    expect(listener.openedTwice()).toBe(true);
    if ('callback' in result) result.callback.finish(false);
    expect((await answer).status).toBe(400);
  });

  it('presented a second time after the sign-in finished: a page that says so, not that nothing was saved', async () => {
    const { listener, outcome } = await listen();
    const start = listener.startForm(authorizationUrl);
    expect((await present(start)).status).toBe(303);
    const answer = fetch(`${listener.redirectUri}?code=c&state=the-state`);
    const result = await outcome;
    if ('callback' in result) result.callback.finish(true);
    expect((await answer).status).toBe(200);
    const again = await present(start);
    expect(again.status).toBe(400);
    expect(again.body).toContain('after the sign-in had finished');
    expect(again.body).not.toContain('Nothing was saved');
  });

  it('a wrong or missing secret, the secret in a URL, another path, method or body gets 404 and leaves it usable', async () => {
    const { listener, outcome } = await listen();
    const start = listener.startForm(authorizationUrl);
    const { action, secret } = start;
    const form = (body: string, type = 'application/x-www-form-urlencoded'): RequestInit => ({ method: 'POST', body, headers: { 'content-type': type } });
    const probes: [string, RequestInit][] = [
      [action, form(`t=${'A'.repeat(secret.length)}`)],
      [action, form(`t=${secret.slice(0, -1)}`)],
      [action, form(`t=${secret}A`)],
      [action, form('t=')],
      [action, form('')],
      [action, form(`t=${secret}&t=${secret}`)],
      [action, form(`t=${secret}&state=the-state`)],
      [action, form(`t=${secret}&pad=${'x'.repeat(4096)}`)],
      [action, form(JSON.stringify({ t: secret }), 'application/json')],
      [action, form(`t=${secret}`, 'text/plain')],
      // The secret never travels in a URL, where it could end up in a log or a history.
      [`${action}?t=${secret}`, form('')],
      [`${action}?t=${secret}`, {}],
      [`${action}?t=${secret}`, { method: 'HEAD' }],
      [`${action}/`, form(`t=${secret}`)],
      [action.replace('/start', '/begin'), form(`t=${secret}`)],
      [action, { method: 'PUT', body: `t=${secret}`, headers: { 'content-type': 'application/x-www-form-urlencoded' } }],
    ];
    for (const [url, init] of probes) {
      const res = await get(url, init);
      expect(res.status, `${init.method ?? 'GET'} ${url} ${typeof init.body === 'string' ? init.body.slice(0, 80) : ''}`).toBe(404);
      expect(res.headers.get('location')).toBeNull();
    }
    expect(await settledYet(outcome)).toBe(pending);
    expect(listener.openedTwice()).toBe(false);
    const opened = await present(start);
    expect(opened.status).toBe(303);
    expect(opened.headers.get('location')).toBe(authorizationUrl);
  });

  it('does not exist until it is asked for (--no-browser), and is made once', async () => {
    const { listener } = await listen();
    const action = `${new URL(listener.redirectUri).origin}/start`;
    expect((await get(action, { method: 'POST', body: new URLSearchParams({ t: '' }) })).status).toBe(404);
    listener.startForm(authorizationUrl);
    expect(() => listener.startForm(authorizationUrl)).toThrow();
  });
});
