/**
 * The built-in API that guards the management API: its identifier is `{issuer}/api/v1`, and it
 * declares a `read:<resource>` and a `write:<resource>` scope for each resource under /api/v1.
 * Callers get these scopes as for any API: machine clients through `clients grant`, people
 * through roles (the built-in `admin` role holds them all).
 */
import { adminRole } from '../directory/roles.js';
import { DuplicateError, type Store } from '../store/store.js';

/** The resources under /api/v1, in the order their scopes are declared. */
export const managementResources = ['users', 'clients', 'apis', 'roles', 'connectors', 'sessions', 'keys', 'audit-events'] as const;

export type ManagementResource = (typeof managementResources)[number];

export type ManagementScope = `read:${ManagementResource}` | `write:${ManagementResource}`;

/** Every scope of the built-in API: read then write, resource by resource. */
export const managementScopes: readonly ManagementScope[] = managementResources.flatMap((resource) => [`read:${resource}`, `write:${resource}`] as const);

/** The display name of the built-in API. */
export const managementApiName = 'Latchkey management API';

/** The identifier (token audience) of the built-in API for a server whose issuer is `issuer`. */
export function managementAudience(issuer: string): string {
  return `${issuer.replace(/\/+$/, '')}/api/v1`;
}

/**
 * Makes sure the built-in API exists and declares every management scope, and that the built-in
 * `admin` role holds them all; run at every start (as the built-in CLI client is). Idempotent, and
 * safe when two instances start at once: the second create finds the first one's API.
 * Scopes an operator added to the API, and other permissions of the role, are kept.
 */
export async function ensureManagementApi(store: Store, issuer: string, now: number): Promise<void> {
  const identifier = managementAudience(issuer);
  let api = await store.findApi(identifier);
  if (!api) {
    try {
      await store.createApi({
        identifier,
        name: managementApiName,
        createdAt: now,
        introspectionClients: [],
        scopes: [...managementScopes],
        managedBy: undefined,
      });
    } catch (err) {
      if (!(err instanceof DuplicateError)) throw err;
    }
    api = await store.findApi(identifier);
  }
  if (api && managementScopes.some((s) => !api.scopes.includes(s))) {
    await store.updateApi({ ...api, scopes: [...api.scopes, ...managementScopes.filter((s) => !api.scopes.includes(s))] });
  }
  const role = await store.findRole(adminRole);
  if (!role) return;
  const held = new Set(role.permissions.filter((p) => p.api === identifier).map((p) => p.scope));
  if (managementScopes.every((s) => held.has(s))) return;
  const missing = managementScopes.filter((s) => !held.has(s)).map((scope) => ({ api: identifier, scope }));
  await store.updateRole(adminRole, { permissions: [...role.permissions, ...missing] });
}

/**
 * Whether `identifier` is the built-in API of the server that last started on this database
 * (the admin commands do not know the issuer otherwise).
 */
export async function isManagementApi(store: Store, identifier: string): Promise<boolean> {
  const recorded = await store.recordedIssuer();
  return recorded !== undefined && managementAudience(recorded.issuer) === identifier;
}

/**
 * Why a change to an API is refused because it is the built-in one, or undefined: it cannot be
 * removed (`scopes` undefined), nor lose a management scope (`scopes` the new list): callers and
 * the `admin` role depend on them.
 */
export async function builtInApiRefusal(store: Store, identifier: string, scopes: readonly string[] | undefined): Promise<string | undefined> {
  if (!(await isManagementApi(store, identifier))) return undefined;
  if (scopes === undefined) return `API "${identifier}" is built in (the management API): it cannot be removed`;
  const lost = managementScopes.filter((s) => !scopes.includes(s));
  if (lost.length === 0) return undefined;
  return `API "${identifier}" is built in (the management API): its scopes ${lost.join(', ')} cannot be removed`;
}
