/**
 * Rules for API permissions and roles: scope names an API declares, role names, and
 * `<api>:<scope>` permissions. API identifiers are usually URLs and scope names often contain
 * colons too (`read:reports`), so a permission is resolved against the registered APIs: the API
 * whose identifier, followed by ':', starts the text, and whose declared scopes hold the rest.
 */
import { supportedScopes } from '../oauth/scope.js';
import type { ApiRecord, Permission, RoleRecord, Store } from '../store/store.js';
import { AdminInputError, hasControlCharacters } from './validation.js';

/** The built-in role whose members may use the admin console. */
export const adminRole = 'admin';

/** RFC 6749 §3.3 scope-token characters; the OIDC scopes are the server's own, not an API's. */
export function validScopeName(value: string): string {
  if (!/^[\x21\x23-\x5B\x5D-\x7E]{1,128}$/.test(value)) {
    throw new AdminInputError(`"${value.slice(0, 80)}" is not a valid scope name: use 1-128 printable characters without spaces, quotes or backslashes`);
  }
  if ((supportedScopes as readonly string[]).includes(value)) {
    throw new AdminInputError(`"${value}" is an OpenID Connect scope of the server itself, not an API permission`);
  }
  return value;
}

/** Distinct, valid scope names in the order given (at most 100). */
export function validScopeNames(values: readonly string[]): string[] {
  const names = [
    ...new Set(
      values
        .map((v) => v.trim())
        .filter((v) => v !== '')
        .map(validScopeName),
    ),
  ];
  if (names.length > 100) throw new AdminInputError('an API may declare at most 100 scopes');
  return names;
}

export function validRoleName(value: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/.test(value)) {
    throw new AdminInputError(`"${value.slice(0, 80)}" is not a valid role name: use 1-64 letters, digits or _ . : - (starting with a letter or digit)`);
  }
  return value;
}

export function validRoleDescription(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed.length > 256) throw new AdminInputError('a role description must be at most 256 characters');
  return trimmed === '' ? undefined : trimmed;
}

/** What resolving a permission needs of an API (a stored one, or one the management API answered). */
export type DeclaringApi = Pick<ApiRecord, 'identifier' | 'scopes'>;

/** The permission `text` names among these APIs, or an AdminInputError saying what is wrong. */
export function resolvePermission(apis: readonly DeclaringApi[], text: string): Permission {
  const candidates = apis.filter((api) => text.startsWith(`${api.identifier}:`)).sort((a, b) => b.identifier.length - a.identifier.length);
  const [longest] = candidates;
  if (longest === undefined) throw new AdminInputError(`permission "${text.slice(0, 200)}" does not start with a registered API identifier followed by ":"`);
  for (const api of candidates) {
    const scope = text.slice(api.identifier.length + 1);
    if (api.scopes.includes(scope)) return { api: api.identifier, scope };
  }
  const api = longest;
  const scope = text.slice(api.identifier.length + 1);
  throw new AdminInputError(
    `API ${api.identifier} declares no scope "${scope.slice(0, 80)}"${api.scopes.length === 0 ? ' (it declares none: apis update --scope)' : ` (it declares: ${api.scopes.join(', ')})`}`,
  );
}

/** Resolves every `<api>:<scope>` against the registered APIs; distinct, sorted by api then scope. */
export async function resolvePermissions(store: Store, texts: readonly string[]): Promise<Permission[]> {
  if (texts.length === 0) return [];
  return resolvePermissionsAmong(await store.listApis(), texts);
}

/** The same among these APIs (the admin commands through the management API list them from there). */
export function resolvePermissionsAmong(apis: readonly DeclaringApi[], texts: readonly string[]): Permission[] {
  const seen = new Map<string, Permission>();
  for (const text of texts) {
    const permission = resolvePermission(apis, text);
    seen.set(`${permission.api}\u0000${permission.scope}`, permission);
  }
  return [...seen.values()].sort((a, b) => (a.api === b.api ? (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : 0) : a.api < b.api ? -1 : 1));
}

/** How a permission is written on the command line and shown. */
export function permissionText(permission: Permission): string {
  return `${permission.api}:${permission.scope}`;
}

/**
 * The roles a person's upstream groups grant: each role naming one of the groups, compared exactly
 * (case and all: a role declared for `platform` is not granted by an upstream's `Platform`), so an
 * upstream can grant only what an operator declared for a name it sends. Sorted by name.
 */
export function rolesForGroups(roles: readonly RoleRecord[], groups: readonly string[]): string[] {
  const held = new Set(groups);
  return roles
    .filter((role) => role.groups.some((group) => held.has(group)))
    .map((role) => role.name)
    .sort();
}

/**
 * The upstream groups that grant a role, distinct and sorted: names as an upstream sends them
 * (1-256 characters without control characters, as upstream groups are kept), at most 100.
 */
export function validGroupNames(values: readonly string[]): string[] {
  const names = [...new Set(values.map((v) => v.trim()).filter((v) => v !== ''))];
  for (const name of names) {
    if (name.length > 256 || hasControlCharacters(name)) {
      throw new AdminInputError(`"${name.slice(0, 80)}" is not a valid group name: use 1-256 characters without control characters`);
    }
  }
  if (names.length > 100) throw new AdminInputError('a role may name at most 100 groups');
  return names.sort();
}
