/**
 * Scopes (RFC 6749 §3.3): the server's own OpenID Connect scopes, the scopes (permissions) the
 * requested API declares, parsing a requested `scope`, and the plain-words descriptions shown to
 * people on confirmation pages.
 */
import { OAuthError } from '../errors.js';
import type { ClientRecord } from '../store/store.js';

export const supportedScopes = ['openid', 'email', 'profile', 'address', 'phone', 'offline_access'] as const;
export type ScopeValue = (typeof supportedScopes)[number];

/** Used when a request carries no `scope` (RFC 6749 §3.3 lets the server pick a default). */
export const defaultScope = 'openid';

/** RFC 6749 §3.3 scope-token characters. */
export const scopeTokenPattern = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

export function isOidcScope(value: string): value is ScopeValue {
  return (supportedScopes as readonly string[]).includes(value);
}

/**
 * Splits, validates and de-duplicates a scope string, keeping the order given. Besides the OIDC
 * scopes, the scopes the requested API declares (`apiScopes`) may be asked for; anything else is
 * invalid_scope.
 */
export function parseScope(raw: string | undefined, apiScopes: readonly string[] = []): string[] {
  const value = raw === undefined || raw.trim() === '' ? defaultScope : raw;
  const tokens = value.split(' ').filter((t) => t !== '');
  const result: string[] = [];
  for (const token of tokens) {
    if (!scopeTokenPattern.test(token)) throw new OAuthError('invalid_scope', 'The scope contains characters that are not allowed.');
    if (!isOidcScope(token) && !apiScopes.includes(token)) {
      throw new OAuthError('invalid_scope', 'A requested scope is not supported.', { detail: `unsupported scope ${token.slice(0, 64)}` });
    }
    if (!result.includes(token)) result.push(token);
  }
  return result;
}

/**
 * What the client actually gets: offline_access (a refresh token) only for clients allowed the
 * refresh_token grant. The token response's `scope` then tells the client what it got.
 */
export function grantableScope(requested: string[], client: ClientRecord): string[] {
  const granted = requested.filter((s) => s !== 'offline_access' || client.grantTypes.includes('refresh_token'));
  if (granted.length === 0) throw new OAuthError('invalid_scope', 'None of the requested scopes can be granted to this client.');
  return granted;
}

export const scopeDescriptions: Record<ScopeValue, string> = {
  openid: 'Confirm who you are (your account ID)',
  email: 'See your email address',
  profile: 'See your name, username and other profile details',
  address: 'See your postal address',
  phone: 'See your phone number',
  offline_access: 'Keep access when you are not using it, until the access is revoked or expires',
};

/** Puts a page text into the page's language (i18n/translate.ts); English as written by default. */
export type PageText = (message: string, params?: Record<string, string>) => string;

const asWritten: PageText = (message, params = {}) => message.replace(/\{(\w+)\}/g, (whole, name: string) => params[name] ?? whole);

/** One line per scope, in the page's language; an API's own scopes are named as the API declares them. */
export function describeScopes(scope: string, t: PageText = asWritten): string[] {
  return scope
    .split(' ')
    .filter((s) => s !== '')
    .map((s) => (isOidcScope(s) ? t(scopeDescriptions[s]) : t('Use the permission “{scope}”', { scope: s })));
}
