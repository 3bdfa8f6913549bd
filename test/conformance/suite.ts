/**
 * A stand-in for the OpenID Foundation conformance suite's OP tests (Basic OP and Config OP
 * plans), so each test file can drive Latchkey the way the suite's modules do: a real HTTP client
 * against a real socket, the suite's checks on every answer, and the test playing the person at
 * the browser (signing in, allowing). See docs/conformance.md for the module-by-module map.
 *
 * Latchkey runs as it is deployed: behind a TLS-terminating reverse proxy, with an https issuer.
 * `opFetch` is that proxy: it sends requests for https://op.example.test to the server's socket.
 * The suite's own address (where the redirect URI points) is never contacted: the person's browser
 * stops when it is sent there, as the suite's callback page would receive it.
 *
 * The checks replicate the suite's conditions (named in comments) with its severities: what it
 * counts as FAILURE fails the test; a WARNING is asserted where the test says so.
 */
import { createHash, randomInt } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose';
import { expect } from 'vitest';
import { addClient, addUser, type TestApp, testApp } from '../helpers/app.js';
import { Browser, fetchTransport, inputValue, type BrowserResponse } from '../helpers/browser.js';
import { freePort } from '../helpers/process.js';
import type { UserProfileClaims, UserRecord } from '../../src/store/store.js';

export const issuer = 'https://op.example.test';
export const discoveryUrl = `${issuer}/.well-known/openid-configuration`;
/** The suite's test alias base URL; the static clients register `${suiteBase}/callback`. */
export const suiteBase = 'https://suite.example.test/test/a/latchkey';
export const callbackUri = `${suiteBase}/callback`;

/** The person the tester signs in as, with every claim the scope tests look for. */
export const person = { username: 'buffy', password: 'conformance-password-1' };
export const personProfile: UserProfileClaims = {
  given_name: 'Buffy',
  family_name: 'Summers',
  middle_name: 'Anne',
  nickname: 'Buff',
  profile: 'https://people.example.test/buffy',
  picture: 'https://people.example.test/buffy.png',
  website: 'https://buffy.example.test',
  gender: 'female',
  birthdate: '1981-01-19',
  zoneinfo: 'America/Los_Angeles',
  locale: 'en-US',
  phone_number: '+1 (805) 555-0100',
  phone_number_verified: true,
  address: {
    formatted: '1630 Revello Drive\nSunnydale, CA 95037\nUS',
    street_address: '1630 Revello Drive',
    locality: 'Sunnydale',
    region: 'CA',
    postal_code: '95037',
    country: 'US',
  },
};

export interface SuiteClient {
  id: string;
  secret: string;
}

export interface Op {
  t: TestApp;
  /** The socket behind the proxy. */
  origin: string;
  user: UserRecord;
  /** The plan's static clients: `client` (client_secret_basic), `client_secret_post`, `client2`. */
  client: SuiteClient;
  clientPost: SuiteClient;
  client2: SuiteClient;
  now(): number;
  close(): Promise<void>;
}

/** Starts Latchkey on a real socket and a real SQLite file, registered as an operator would for a certification run. */
export async function startOp(env: Record<string, string> = {}): Promise<Op> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-oidcc-'));
  const port = await freePort();
  const t = await testApp({ LATCHKEY_ISSUER: issuer, ...env }, { path: join(dir, 'latchkey.db') });
  const user = await addUser(t.store, person.username, person.password, {
    name: 'Buffy Summers',
    email: 'buffy@example.test',
    profile: personProfile,
    updatedAt: 1_790_000_000,
  });
  const register = async (id: string): Promise<SuiteClient> => {
    const { secret } = await addClient(t.store, id, {
      name: `Conformance ${id}`,
      confidential: true,
      redirectUris: [callbackUri],
      grantTypes: ['authorization_code', 'refresh_token'],
    });
    return { id, secret: secret! };
  };
  const client = await register('oidcc-client');
  const clientPost = await register('oidcc-client-post');
  const client2 = await register('oidcc-client2');
  await t.app.listen({ port, host: '127.0.0.1' });
  return {
    t,
    origin: `http://127.0.0.1:${port}`,
    user,
    client,
    clientPost,
    client2,
    now: () => Math.floor(t.clock()),
    async close() {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The reverse proxy: a request for the issuer's origin goes to the server's socket. */
export function opFetch(op: Op, url: string, init: RequestInit = {}): Promise<Response> {
  if (!url.startsWith(`${issuer}/`)) throw new Error(`not an address of the OP: ${url}`);
  return fetch(op.origin + url.slice(issuer.length), { redirect: 'manual', ...init });
}

/** The suite's random values: alphanumerics (CreateRandomStateValue, CreateRandomNonceValue). */
export function randomAlphanumeric(length: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return Array.from({ length }, () => alphabet[randomInt(alphabet.length)]).join('');
}

export interface AuthorizationRequest {
  url: string;
  params: Record<string, string>;
  state: string | undefined;
  nonce: string | undefined;
}

/**
 * CreateAuthorizationRequestSteps: client_id, redirect_uri, scope=openid, state, nonce,
 * response_type=code, then each module's extras (`undefined` leaves a parameter out).
 */
export function authorizationRequest(client: SuiteClient, extras: Record<string, string | undefined> = {}): AuthorizationRequest {
  const params: Record<string, string | undefined> = {
    client_id: client.id,
    redirect_uri: callbackUri,
    scope: 'openid',
    state: randomAlphanumeric(10),
    nonce: randomAlphanumeric(10),
    response_type: 'code',
    ...extras,
  };
  const kept = Object.fromEntries(Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined));
  return { url: `${issuer}/authorize?${new URLSearchParams(kept).toString()}`, params: kept, state: kept.state, nonce: kept.nonce };
}

export type PageKind = 'login' | 'consent' | 'error' | 'other';

export type BrowserOutcome =
  /** The browser reached the suite's registered callback (or another address under the suite). */
  | { kind: 'callback'; url: URL; pages: PageKind[] }
  /** The OP stopped on a page of its own (what the tester would screenshot). */
  | { kind: 'page'; status: number; body: string; pages: PageKind[] };

function pageKind(res: BrowserResponse): PageKind {
  if (res.body.includes('action="/login"') && res.body.includes('name="password"')) return 'login';
  if (res.body.includes('action="/authorize/decision"')) return 'consent';
  if (res.status >= 400) return 'error';
  return 'other';
}

/**
 * The tester at the browser: cookies kept for the OP's origin, every redirect followed; on the
 * sign-in page they sign in as `person`, on a consent page they allow. Stops at the suite's
 * callback or on a page that asks nothing more of them.
 */
export class Tester {
  readonly browser: Browser;

  constructor(
    op: Op,
    private readonly credentials = person,
  ) {
    this.browser = new Browser(fetchTransport(op.origin), 'Mozilla/5.0 (conformance tester)');
  }

  /** Loads `url` (GET, or POST of its query as a form: oidcc-ensure-post-request-succeeds) and acts until the flow leaves the OP. */
  async open(url: string, method: 'GET' | 'POST' = 'GET'): Promise<BrowserOutcome> {
    const pages: PageKind[] = [];
    let res: BrowserResponse;
    if (method === 'POST') {
      const [endpoint, query = ''] = url.split('?');
      res = await this.browser.post(this.path(endpoint!), Object.fromEntries(new URLSearchParams(query)));
    } else {
      res = await this.browser.get(this.path(url));
    }
    for (let step = 0; step < 20; step++) {
      if (res.status >= 300 && res.status < 400 && res.location) {
        const target = new URL(res.location, issuer);
        if (target.origin !== issuer) return { kind: 'callback', url: target, pages };
        res = await this.browser.get(target.pathname + target.search);
        continue;
      }
      const kind = pageKind(res);
      pages.push(kind);
      if (kind === 'login') {
        res = await this.browser.post('/login', {
          csrf_token: inputValue(res.body, 'csrf_token') ?? '',
          return_to: inputValue(res.body, 'return_to') ?? '',
          username: this.credentials.username,
          password: this.credentials.password,
        });
        continue;
      }
      if (kind === 'consent') {
        res = await this.browser.post('/authorize/decision', {
          csrf_token: inputValue(res.body, 'csrf_token') ?? '',
          interaction: inputValue(res.body, 'interaction') ?? '',
          decision: 'allow',
        });
        continue;
      }
      return { kind: 'page', status: res.status, body: res.body, pages };
    }
    throw new Error('the authorization did not end within 20 steps');
  }

  private path(url: string): string {
    const target = new URL(url, issuer);
    if (target.origin !== issuer) throw new Error(`the tester only opens the OP: ${url}`);
    return target.pathname + target.search;
  }
}

/** The authorization response at the callback, as the suite reads it: the query of the redirect. */
export function callbackParams(outcome: BrowserOutcome): Record<string, string> {
  if (outcome.kind !== 'callback') throw new Error(`expected a redirect to the suite, got a page (${outcome.status}): ${outcome.body.slice(0, 300)}`);
  expect(outcome.url.origin + outcome.url.pathname, 'the registered redirect URI').toBe(callbackUri);
  return Object.fromEntries(outcome.url.searchParams);
}

/**
 * onAuthorizationCallbackResponse for an expected success: ValidateIssIfPresentInAuthorizationResponse,
 * CheckIfAuthorizationEndpointError, CheckStateInAuthorizationResponse,
 * ExtractAuthorizationCodeFromAuthorizationResponse. Returns the code.
 */
export function expectCode(outcome: BrowserOutcome, request: AuthorizationRequest): string {
  const params = callbackParams(outcome);
  if (params.iss !== undefined) expect(params.iss).toBe(issuer);
  expect(params.error, `authorization error: ${params.error} ${params.error_description ?? ''}`).toBeUndefined();
  expect(params.state).toBe(request.state);
  expect(params.code).toBeTruthy();
  return params.code!;
}

/** performGenericAuthorizationEndpointErrorResponseValidation: the error redirect's shape. */
export function expectAuthorizationError(outcome: BrowserOutcome, state: string | undefined): string {
  const params = callbackParams(outcome);
  expect(params.state).toBe(state);
  if (params.iss !== undefined) expect(params.iss).toBe(issuer);
  expect(params.error).toBeTruthy();
  expect(params.code).toBeUndefined();
  expect(outcome.kind === 'callback' && outcome.url.hash).toBeFalsy();
  // CheckForUnexpectedParametersInErrorResponseFromAuthorizationEndpoint (WARNING): nothing else.
  expect(Object.keys(params).filter((k) => !['error', 'error_description', 'error_uri', 'state', 'session_state', 'iss'].includes(k))).toStrictEqual([]);
  if (params.error_description !== undefined) {
    // ValidateErrorDescription…: %x09-0A / %x0D / %x20-21 / %x23-5B / %x5D-7E; CR/LF/TAB only WARNING, none here.
    expect(params.error_description).toMatch(/^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/);
  }
  return params.error!;
}

export interface TokenAnswer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** CallTokenEndpoint with the module's client authentication (client_secret_basic form-urlencodes id and secret first). */
export async function tokenRequest(
  op: Op,
  client: SuiteClient,
  fields: Record<string, string>,
  auth: 'client_secret_basic' | 'client_secret_post' = 'client_secret_basic',
): Promise<TokenAnswer> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
  const form = { ...fields };
  if (auth === 'client_secret_basic') {
    const encode = (v: string) => encodeURIComponent(v).replace(/%20/g, '+');
    headers.authorization = `Basic ${Buffer.from(`${encode(client.id)}:${encode(client.secret)}`).toString('base64')}`;
  } else {
    form.client_id = client.id;
    form.client_secret = client.secret;
  }
  const res = await opFetch(op, `${issuer}/oauth/token`, { method: 'POST', headers, body: new URLSearchParams(form).toString() });
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { unparsable: text };
  }
  return { status: res.status, headers: res.headers, body };
}

export interface Tokens {
  accessToken: string;
  tokenType: string;
  idToken: string;
  refreshToken: string | undefined;
  claims: JWTPayload;
  answer: TokenAnswer;
}

/**
 * The code redeemed as the suite does, with its checks: 200 JSON, access_token and token_type
 * (CheckForAccessTokenValue), expires_in a positive number (ValidateExpiresIn), an id_token
 * (ExtractIdTokenFromTokenResponse) passing PerformStandardIdTokenChecks, at_hash/c_hash when present.
 */
export async function redeem(
  op: Op,
  client: SuiteClient,
  code: string,
  request: AuthorizationRequest,
  options: { auth?: 'client_secret_basic' | 'client_secret_post'; codeVerifier?: string } = {},
): Promise<Tokens> {
  const answer = await tokenRequest(
    op,
    client,
    {
      grant_type: 'authorization_code',
      code,
      redirect_uri: request.params.redirect_uri!,
      ...(options.codeVerifier ? { code_verifier: options.codeVerifier } : {}),
    },
    options.auth,
  );
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  expect(answer.headers.get('content-type')).toMatch(/^application\/json(;|$)/);
  expect(answer.headers.get('cache-control')).toMatch(/(^|,\s*)no-store(\s*,|$)/);
  const { access_token, token_type, expires_in, id_token, refresh_token } = answer.body;
  expect(typeof access_token === 'string' && access_token !== '').toBe(true);
  expect(String(token_type).toLowerCase()).toBe('bearer');
  expect(typeof expires_in === 'number' && expires_in > 0).toBe(true);
  expect(typeof id_token).toBe('string');
  const claims = await expectValidIdToken(op, id_token as string, { clientId: client.id, nonce: request.nonce, accessToken: access_token as string, code });
  return {
    accessToken: access_token as string,
    tokenType: token_type as string,
    idToken: id_token as string,
    refreshToken: refresh_token as string | undefined,
    claims,
    answer,
  };
}

/** The JWKS as the suite fetches it (FetchServerKeys): through discovery's jwks_uri, each time. */
export async function fetchJwks(op: Op): Promise<{ keys: Record<string, unknown>[] }> {
  const discovery = (await (await opFetch(op, discoveryUrl)).json()) as { jwks_uri: string };
  return (await (await opFetch(op, discovery.jwks_uri)).json()) as { keys: Record<string, unknown>[] };
}

/** The left half of SHA-256, base64url (at_hash / c_hash for RS256, OIDC Core §3.1.3.6). */
export function leftHalfHash(value: string): string {
  const digest = createHash('sha256').update(value, 'ascii').digest();
  return digest.subarray(0, 16).toString('base64url');
}

/**
 * PerformStandardIdTokenChecks and CheckForSubjectInIdToken: signature by a JWKS key found by the
 * header's kid; iss; aud; exp not past; iat within 5 minutes; auth_time sane; acr non-empty;
 * nonce echoed; sub ≤ 255 printable ASCII; standard claims well-typed; at_hash/c_hash right.
 */
export async function expectValidIdToken(
  op: Op,
  idToken: string,
  expected: { clientId: string; nonce: string | undefined; accessToken?: string; code?: string },
): Promise<JWTPayload> {
  const header = decodeProtectedHeader(idToken);
  expect(header.alg).toBe('RS256');
  expect(typeof header.kid === 'string' && header.kid !== '').toBe(true);
  const jwks = await fetchJwks(op);
  expect(jwks.keys.some((k) => k.kid === header.kid)).toBe(true);
  const now = op.now();
  const { payload } = await jwtVerify(idToken, createLocalJWKSet(jwks), {
    issuer,
    audience: expected.clientId,
    currentDate: new Date(now * 1000),
    clockTolerance: 300,
  });
  expect(typeof payload.exp).toBe('number');
  expect(typeof payload.iat).toBe('number');
  expect(Math.abs(payload.iat! - now)).toBeLessThanOrEqual(300);
  if (payload.auth_time !== undefined) {
    expect(Number.isInteger(payload.auth_time)).toBe(true);
    expect(payload.auth_time as number).toBeLessThanOrEqual(now + 300);
    expect(payload.auth_time as number).toBeGreaterThanOrEqual(now - 365 * 86400);
  }
  if (payload.acr !== undefined) expect(typeof payload.acr === 'string' && payload.acr !== '').toBe(true);
  if (expected.nonce === undefined) expect(payload.nonce).toBeUndefined();
  else expect(payload.nonce).toBe(expected.nonce);
  expect(payload.sub).toMatch(/^[\x20-\x7e]{1,255}$/);
  if (payload.at_hash !== undefined) expect(payload.at_hash).toBe(leftHalfHash(expected.accessToken ?? ''));
  if (payload.c_hash !== undefined) expect(payload.c_hash).toBe(leftHalfHash(expected.code ?? ''));
  expectStandardClaimTypes(payload);
  return payload;
}

/** AbstractValidateOpenIdStandardClaims: the types of the OIDC standard claims that are present. */
export function expectStandardClaimTypes(claims: Record<string, unknown>): void {
  const strings = [
    'sub',
    'name',
    'given_name',
    'family_name',
    'middle_name',
    'nickname',
    'preferred_username',
    'profile',
    'picture',
    'website',
    'email',
    'gender',
    'zoneinfo',
    'locale',
    'phone_number',
  ];
  for (const name of strings) {
    if (claims[name] === undefined) continue;
    expect(typeof claims[name], name).toBe('string');
    expect((claims[name] as string).trim(), name).not.toBe('');
    expect((claims[name] as string).toLowerCase(), name).not.toBe('null');
  }
  for (const name of ['email_verified', 'phone_number_verified']) if (claims[name] !== undefined) expect(typeof claims[name], name).toBe('boolean');
  if (claims.updated_at !== undefined) {
    expect(typeof claims.updated_at).toBe('number');
    // EnsureUserInfoUpdatedAtValid: not before 1990.
    expect(claims.updated_at as number).toBeGreaterThanOrEqual(631_152_000);
  }
  if (claims.birthdate !== undefined) expect(claims.birthdate).toMatch(/^(\d{4}|\d{4}-\d{2}-\d{2})$/);
  if (claims.address !== undefined) {
    expect(typeof claims.address === 'object' && claims.address !== null && Object.keys(claims.address).length > 0).toBe(true);
    for (const member of ['formatted', 'street_address', 'locality', 'region', 'postal_code', 'country']) {
      const value = (claims.address as Record<string, unknown>)[member];
      if (value !== undefined) expect(typeof value === 'string' && value.trim() !== '', `address.${member}`).toBe(true);
    }
  }
}

export type UserinfoMethod = 'get' | 'post-header' | 'post-body';

/**
 * CallUserInfoEndpoint (GET or POST with the token in the header, `Authorization: <token_type>
 * <token>`) or CallUserInfoEndpointWithBearerTokenInBody; then EnsureHttpStatusCodeIs200,
 * EnsureContentTypeJson, a JSON object with sub, well-typed claims.
 */
export async function userinfo(op: Op, tokens: Pick<Tokens, 'accessToken' | 'tokenType'>, method: UserinfoMethod = 'get'): Promise<Record<string, unknown>> {
  const url = `${issuer}/userinfo`;
  const headers: Record<string, string> = { accept: 'application/json' };
  let init: RequestInit;
  if (method === 'get') init = { method: 'GET', headers: { ...headers, authorization: `${tokens.tokenType} ${tokens.accessToken}` } };
  else if (method === 'post-header')
    init = {
      method: 'POST',
      headers: { ...headers, authorization: `${tokens.tokenType} ${tokens.accessToken}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
    };
  else
    init = {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ access_token: tokens.accessToken }).toString(),
    };
  const res = await opFetch(op, url, init);
  const text = await res.text();
  expect(res.status, text).toBe(200);
  expect((res.headers.get('content-type') ?? '').split(';')[0]!.trim()).toBe('application/json');
  const parsed: unknown = JSON.parse(text);
  expect(typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)).toBe(true);
  const body = parsed as Record<string, unknown>;
  expect(typeof body.sub).toBe('string');
  expectStandardClaimTypes(body);
  return body;
}

/** A whole successful code flow as oidcc-server runs it: authorize, redeem, userinfo. */
export async function codeFlow(
  op: Op,
  tester: Tester,
  options: {
    client?: SuiteClient;
    extras?: Record<string, string | undefined>;
    auth?: 'client_secret_basic' | 'client_secret_post';
    method?: 'GET' | 'POST';
    codeVerifier?: string;
  } = {},
): Promise<{ request: AuthorizationRequest; outcome: BrowserOutcome; code: string; tokens: Tokens }> {
  const client = options.client ?? op.client;
  const request = authorizationRequest(client, options.extras);
  const outcome = await tester.open(request.url, options.method);
  const code = expectCode(outcome, request);
  const tokens = await redeem(op, client, code, request, {
    ...(options.auth ? { auth: options.auth } : {}),
    ...(options.codeVerifier ? { codeVerifier: options.codeVerifier } : {}),
  });
  await userinfo(op, tokens);
  return { request, outcome, code, tokens };
}

/** An unsigned request object (SerializeRequestObjectWithNullAlgorithm): header {"alg":"none"}, empty signature. */
export function unsignedRequestObject(claims: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none' })}.${part(claims)}.`;
}
