/**
 * Scopes (RFC 6749 §3.3): the supported values, parsing a requested `scope`, and the plain-words
 * descriptions shown to people on confirmation pages.
 */
import { OAuthError } from '../errors.js';
import type { ClientRecord } from '../store/store.js';

export const supportedScopes = ['openid', 'email', 'profile', 'offline_access'] as const;
export type ScopeValue = (typeof supportedScopes)[number];

/** Used when a request carries no `scope` (RFC 6749 §3.3 lets the server pick a default). */
export const defaultScope = 'openid';

const scopeTokenPattern = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

/** Splits, validates and de-duplicates a scope string, keeping the order given. */
export function parseScope(raw: string | undefined): ScopeValue[] {
  const value = raw === undefined || raw.trim() === '' ? defaultScope : raw;
  const tokens = value.split(' ').filter((t) => t !== '');
  const result: ScopeValue[] = [];
  for (const token of tokens) {
    if (!scopeTokenPattern.test(token)) throw new OAuthError('invalid_scope', 'The scope contains characters that are not allowed.');
    if (!(supportedScopes as readonly string[]).includes(token)) {
      throw new OAuthError('invalid_scope', 'A requested scope is not supported.', { detail: `unsupported scope ${token.slice(0, 64)}` });
    }
    if (!result.includes(token as ScopeValue)) result.push(token as ScopeValue);
  }
  return result;
}

/**
 * What the client actually gets: offline_access (a refresh token) only for clients allowed the
 * refresh_token grant. The token response's `scope` then tells the client what it got.
 */
export function grantableScope(requested: ScopeValue[], client: ClientRecord): ScopeValue[] {
  const granted = requested.filter((s) => s !== 'offline_access' || client.grantTypes.includes('refresh_token'));
  if (granted.length === 0) throw new OAuthError('invalid_scope', 'None of the requested scopes can be granted to this client.');
  return granted;
}

export const scopeDescriptions: Record<ScopeValue, string> = {
  openid: 'Confirm who you are (your account ID)',
  email: 'See your email address',
  profile: 'See your name and username',
  offline_access: 'Keep access when you are not using it, until the access is revoked or expires',
};

export function describeScopes(scope: string): string[] {
  return scope
    .split(' ')
    .filter((s): s is ScopeValue => Object.hasOwn(scopeDescriptions, s))
    .map((s) => scopeDescriptions[s]);
}
