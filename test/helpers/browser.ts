/**
 * A minimal browser for tests: a cookie jar, GET and form POST, following nothing by itself so
 * tests can assert every redirect. Works over app.inject or over a real socket (fetch).
 */
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';

export interface BrowserResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  location: string | undefined;
}

type Transport = (method: 'GET' | 'POST', path: string, headers: Record<string, string>, body?: string) => Promise<BrowserResponse>;

export function injectTransport(app: FastifyInstance): Transport {
  return async (method, path, headers, body) => {
    const res = await app.inject({ method, url: path, headers, ...(body === undefined ? {} : { payload: body }) });
    const flat: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.headers)) flat[k] = Array.isArray(v) ? v.join('\n') : String(v);
    const setCookie = res.headers['set-cookie'];
    if (setCookie !== undefined) flat['set-cookie'] = Array.isArray(setCookie) ? setCookie.join('\n') : setCookie;
    return { status: res.statusCode, headers: flat, body: res.body, location: flat.location };
  };
}

export function fetchTransport(baseUrl: string): Transport {
  return async (method, path, headers, body) => {
    const res = await fetch(baseUrl + path, { method, headers, redirect: 'manual', ...(body === undefined ? {} : { body }) });
    const flat: Record<string, string> = {};
    res.headers.forEach((v, k) => {
      flat[k] = v;
    });
    const cookies = res.headers.getSetCookie();
    if (cookies.length) flat['set-cookie'] = cookies.join('\n');
    return { status: res.status, headers: flat, body: await res.text(), location: flat.location };
  };
}

export class Browser {
  readonly cookies = new Map<string, string>();
  /** Sent with every request, e.g. an X-Forwarded-For to play a person at another address. */
  extraHeaders: Record<string, string> = {};

  constructor(
    private readonly transport: Transport,
    readonly userAgent = 'Mozilla/5.0 (test browser)',
  ) {}

  private remember(res: BrowserResponse): BrowserResponse {
    for (const line of (res.headers['set-cookie'] ?? '').split('\n').filter(Boolean)) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (value === '' || /max-age=0|expires=thu, 01 jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return res;
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    return { 'user-agent': this.userAgent, accept: 'text/html', ...(cookie ? { cookie } : {}), ...this.extraHeaders, ...extra };
  }

  async get(path: string): Promise<BrowserResponse> {
    return this.remember(await this.transport('GET', path, this.headers()));
  }

  async post(path: string, fields: Record<string, string>): Promise<BrowserResponse> {
    const body = new URLSearchParams(fields).toString();
    return this.remember(await this.transport('POST', path, this.headers({ 'content-type': 'application/x-www-form-urlencoded' }), body));
  }

  /** Follows redirects (GET) until a page answers. */
  async follow(res: BrowserResponse, limit = 5): Promise<BrowserResponse> {
    let current = res;
    for (let i = 0; i < limit && current.status >= 300 && current.status < 400 && current.location; i++) {
      current = await this.get(current.location);
    }
    return current;
  }
}

/** The value of a named input in an HTML page (hidden fields included), HTML entities decoded. */
export function inputValue(html: string, name: string): string | undefined {
  const tag = html.match(new RegExp(`<input[^>]*name="${name}"[^>]*>`))?.[0];
  const value = tag?.match(/value="([^"]*)"/)?.[1];
  return value === undefined ? undefined : decodeEntities(value);
}

export function decodeEntities(text: string): string {
  return text
    .replace(/&#39;/g, "'")
    .replace(/&#x27;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/** Signs in through the real login form, starting from whatever page asked for it. */
export async function signIn(browser: Browser, loginPage: BrowserResponse, username: string, password: string): Promise<BrowserResponse> {
  return browser.post('/login', {
    csrf_token: inputValue(loginPage.body, 'csrf_token') ?? '',
    return_to: inputValue(loginPage.body, 'return_to') ?? '',
    username,
    password,
  });
}

/**
 * The person's whole part of the device flow: open verification_uri_complete, press Continue,
 * sign in if asked, then Allow or Deny. Returns the final result page.
 */
export async function actOnDeviceCode(
  browser: Browser,
  verificationPath: string,
  credentials: { username: string; password: string },
  decision: 'allow' | 'deny',
): Promise<BrowserResponse> {
  const entry = await browser.get(verificationPath);
  if (entry.status !== 200) throw new Error(`activate page answered ${entry.status}`);
  let page = await browser.post('/activate', {
    csrf_token: inputValue(entry.body, 'csrf_token') ?? '',
    user_code: inputValue(entry.body, 'user_code') ?? '',
  });
  page = await browser.follow(page);
  if (page.body.includes('action="/login"')) page = await browser.follow(await signIn(browser, page, credentials.username, credentials.password));
  if (!page.body.includes('name="decision"')) throw new Error(`no confirmation page: ${page.status} ${page.body.slice(0, 500)}`);
  return browser.post('/activate/confirm', {
    csrf_token: inputValue(page.body, 'csrf_token') ?? '',
    user_code: inputValue(page.body, 'user_code') ?? '',
    decision,
  });
}

/**
 * The person's part of an authorization request: open it, sign in if asked, Allow on the consent
 * or confirmation page if one is shown. Returns the address the browser is sent back to.
 */
export async function personAllows(browser: Browser, authorizationUrl: URL, username: string, password: string): Promise<URL> {
  let page = await browser.get(authorizationUrl.pathname + authorizationUrl.search);
  if (page.status === 303 && page.location?.startsWith('/login')) {
    page = await signIn(browser, await browser.get(page.location), username, password);
    page = await browser.get(page.location!);
  }
  if (page.status === 200) {
    expect(page.body).toContain('name="decision"');
    page = await browser.post('/authorize/decision', {
      csrf_token: inputValue(page.body, 'csrf_token')!,
      interaction: inputValue(page.body, 'interaction')!,
      decision: 'allow',
    });
  }
  expect([302, 303]).toContain(page.status);
  return new URL(page.location!);
}
