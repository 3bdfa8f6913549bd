/**
 * What the bench measures: each scenario is one request shape against one endpoint, with the answer
 * that counts as the expected one (a pending poll's expected answer is a 400 authorization_pending)
 * — except the browser sign-ins, whole flows of five requests (seven with a TOTP second step)
 * driven by sign_in_load.ts.
 */
import {
  codeVerifier,
  deviceClientId,
  deviceScope,
  redirectUri,
  signInClientId,
  signInRedirectUri,
  signInScope,
  webClientId,
  type SignInAccount,
} from './seed.js';

export type ScenarioName =
  | 'device_authorization'
  | 'device_poll_pending'
  | 'device_token_issuance'
  | 'code_exchange'
  | 'refresh'
  | 'userinfo'
  | 'jwks'
  | 'browser_sign_in'
  | 'browser_sign_in_totp';

/** The scenarios that sign people in through the pages, measured beside the raw password rate. */
export const signInScenarios: readonly ScenarioName[] = ['browser_sign_in', 'browser_sign_in_totp'];

export interface Expected {
  status: number;
  error?: string;
}

export interface ScenarioRequest {
  path: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  /** One body for every request, or a list of bodies used in turn. */
  body?: string;
  bodies?: string[];
  expected: Expected;
  /** A whole browser sign-in per "request" (sign_in_load.ts), instead of one request shape. */
  signIn?: SignInFlow;
}

/** What a simulated browser needs to sign in to the web application, from /authorize to its tokens. */
export interface SignInFlow {
  clientId: string;
  redirectUri: string;
  scope: string;
  /**
   * Without a second step: one per simulated browser. With a TOTP step: a pool the browsers take
   * turns with, each account signing in at most once per 30 s step (a code is accepted once).
   */
  accounts: SignInAccount[];
  /** The second step every account answers after its password (accounts carry their TOTP secret). */
  secondFactor?: 'totp';
  /** Simulated browsers at once, with a pool of accounts (at most the load's connections). */
  browsers?: number;
}

const form = { 'content-type': 'application/x-www-form-urlencoded' };
const deviceGrantType = 'urn:ietf:params:oauth:grant-type:device_code';
const encode = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

export function deviceAuthorizationRequest(): ScenarioRequest {
  return {
    path: '/oauth/device/code',
    method: 'POST',
    headers: form,
    body: encode({ client_id: deviceClientId, scope: deviceScope }),
    expected: { status: 200 },
  };
}

export function devicePollRequest(deviceCodes: string[], expected: Expected): ScenarioRequest {
  return {
    path: '/oauth/token',
    method: 'POST',
    headers: form,
    bodies: deviceCodes.map((code) => encode({ grant_type: deviceGrantType, device_code: code, client_id: deviceClientId })),
    expected,
  };
}

export function codeExchangeRequest(codes: string[]): ScenarioRequest {
  return {
    path: '/oauth/token',
    method: 'POST',
    headers: form,
    bodies: codes.map((code) =>
      encode({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: webClientId, code_verifier: codeVerifier }),
    ),
    expected: { status: 200 },
  };
}

export function refreshRequest(tokens: string[]): ScenarioRequest {
  return {
    path: '/oauth/token',
    method: 'POST',
    headers: form,
    bodies: tokens.map((token) => encode({ grant_type: 'refresh_token', refresh_token: token, client_id: deviceClientId })),
    expected: { status: 200 },
  };
}

export function userinfoRequest(accessToken: string): ScenarioRequest {
  return { path: '/userinfo', method: 'GET', headers: { authorization: `Bearer ${accessToken}` }, expected: { status: 200 } };
}

export function jwksRequest(): ScenarioRequest {
  return { path: '/.well-known/jwks.json', method: 'GET', headers: {}, expected: { status: 200 } };
}

/**
 * GET /authorize → the sign-in page → POST username and password → the code at the application's
 * redirect → POST /oauth/token: a whole sign-in counts once, answered when the token response is a 200.
 */
export function browserSignInRequest(accounts: SignInAccount[]): ScenarioRequest {
  return {
    path: '/authorize',
    method: 'GET',
    headers: {},
    expected: { status: 200 },
    signIn: { clientId: signInClientId, redirectUri: signInRedirectUri, scope: signInScope, accounts },
  };
}

/**
 * The same sign-in with a second step between the password and the code: the second-factor page,
 * then POST the code of the current 30 s step computed from the account's TOTP secret (RFC 6238).
 * `browsers` sign in at once, taking turns with the accounts so that none presents a code twice.
 */
export function browserSignInTotpRequest(accounts: SignInAccount[], browsers: number): ScenarioRequest {
  return {
    path: '/authorize',
    method: 'GET',
    headers: {},
    expected: { status: 200 },
    signIn: { clientId: signInClientId, redirectUri: signInRedirectUri, scope: signInScope, accounts, secondFactor: 'totp', browsers },
  };
}
