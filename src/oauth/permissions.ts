/**
 * What a person's roles allow: the OIDC scopes are the person's own to give and pass
 * through; an API's scopes are kept only when one of the person's roles holds that permission
 * and the API still declares it. Applied when the person is asked (the consent page shows only
 * what they can give) and again at every issuance, refresh included, so a role taken away ends
 * at the next refresh. Nothing is ever added: the result is a subset of what was asked. When
 * nothing at all is left, callers refuse rather than issue a token that allows nothing.
 */
import type { ApiRecord, Store, UserRecord } from '../store/store.js';
import { isOidcScope } from './scope.js';

export interface PermittedAccess {
  /** The requested scope narrowed to what the roles allow ('' when nothing is left). */
  scope: string;
  /** The audience's API, when it is one and it mattered (API scopes asked for, or a person with roles). */
  api: ApiRecord | undefined;
}

export async function permittedAccess(store: Store, user: UserRecord, audience: string, scope: string): Promise<PermittedAccess> {
  const requested = scope.split(' ').filter((s) => s !== '');
  const apiScopes = requested.filter((s) => !isOidcScope(s));
  // Most requests ask for OIDC scopes only, by people without roles: no lookup at all.
  if (apiScopes.length === 0 && user.roles.length === 0) return { scope: requested.join(' '), api: undefined };
  const api = await store.findApi(audience);
  if (apiScopes.length === 0) return { scope: requested.join(' '), api };
  const permitted = user.roles.length === 0 || !api ? [] : await store.permittedScopes(user.id, audience);
  const allowed = new Set(permitted.filter((s) => api?.scopes.includes(s)));
  return { scope: requested.filter((s) => isOidcScope(s) || allowed.has(s)).join(' '), api };
}

export async function permittedScope(store: Store, user: UserRecord, audience: string, scope: string): Promise<string> {
  return (await permittedAccess(store, user, audience, scope)).scope;
}

/** The one sentence for "your roles allow none of what was asked". */
export const nothingPermitted = 'The account has no permission for the requested access.';
