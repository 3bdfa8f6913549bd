/**
 * The loopback listener of `latchkey login` on a real local socket: its one-time start address
 * (what the browser command is given instead of the authorization request, which any local account
 * could read from the command line) redirects once, and a second opening cancels the sign-in.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { listenForCallback, SignInHijacked, type Callback, type CallbackListener } from '../../src/cli/client/loopback.js';

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

const pending = Symbol('pending');
const settledYet = (promise: Promise<unknown>) => Promise.race([promise, new Promise((resolve) => setTimeout(() => resolve(pending), 50))]);

describe('the start address', () => {
  it('is a fresh 256-bit address on the callback port that answers once with a 302 to the request', async () => {
    const { listener, outcome } = await listen();
    const start = listener.startAddress(authorizationUrl);
    const port = new URL(listener.redirectUri).port;
    expect(start).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/start\\?t=[A-Za-z0-9_-]{43}$`));
    expect(start).not.toContain('the-state');

    const opened = await get(start);
    expect(opened.status).toBe(302);
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

  it('opened a second time answers 400, rejects the callback with SignInHijacked, and refuses every callback after', async () => {
    const { listener, outcome } = await listen();
    const start = listener.startAddress(authorizationUrl);
    expect((await get(start)).status).toBe(302);
    const again = await get(start);
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
    expect((await get(start)).status).toBe(400);
  });

  it('opened a second time while the code is being redeemed: openedTwice() tells the caller not to store', async () => {
    const { listener, outcome } = await listen();
    const start = listener.startAddress(authorizationUrl);
    expect((await get(start)).status).toBe(302);
    const answer = fetch(`${listener.redirectUri}?code=c&state=the-state`);
    const result = await outcome;
    expect('callback' in result).toBe(true);
    expect(listener.openedTwice()).toBe(false);
    const again = await get(start);
    expect(again.status).toBe(400);
    expect(again.body).toContain('Sign-in cancelled');
    expect(listener.openedTwice()).toBe(true);
    if ('callback' in result) result.callback.finish(false);
    expect((await answer).status).toBe(400);
  });

  it('opened a second time after the sign-in finished: a page that says so, not that nothing was saved', async () => {
    const { listener, outcome } = await listen();
    const start = listener.startAddress(authorizationUrl);
    expect((await get(start)).status).toBe(302);
    const answer = fetch(`${listener.redirectUri}?code=c&state=the-state`);
    const result = await outcome;
    if ('callback' in result) result.callback.finish(true);
    expect((await answer).status).toBe(200);
    const again = await get(start);
    expect(again.status).toBe(400);
    expect(again.body).toContain('after the sign-in had finished');
    expect(again.body).not.toContain('Nothing was saved');
  });

  it('a wrong t, no t, another path or another method gets 404 and leaves it usable', async () => {
    const { listener, outcome } = await listen();
    const start = listener.startAddress(authorizationUrl);
    const { origin, searchParams } = new URL(start);
    const t = searchParams.get('t')!;
    const probes: [string, RequestInit][] = [
      [`${origin}/start?t=${'A'.repeat(t.length)}`, {}],
      [`${origin}/start?t=${t.slice(0, -1)}`, {}],
      [`${origin}/start?t=${t}A`, {}],
      [`${origin}/start?t=`, {}],
      [`${origin}/start`, {}],
      [`${origin}/begin?t=${t}`, {}],
      [`${origin}/start/?t=${t}`, {}],
      [start, { method: 'POST' }],
      [start, { method: 'HEAD' }],
    ];
    for (const [url, init] of probes) {
      const res = await get(url, init);
      expect(res.status, `${init.method ?? 'GET'} ${url}`).toBe(404);
      expect(res.headers.get('location')).toBeNull();
    }
    expect(await settledYet(outcome)).toBe(pending);
    expect((await get(start)).status).toBe(302);
  });

  it('does not exist until it is asked for (--no-browser), and is made once', async () => {
    const { listener } = await listen();
    expect((await get(`${new URL(listener.redirectUri).origin}/start?t=`)).status).toBe(404);
    listener.startAddress(authorizationUrl);
    expect(() => listener.startAddress(authorizationUrl)).toThrow();
  });
});
