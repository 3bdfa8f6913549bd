/**
 * The built-in API that guards the management API: its identifier is `{issuer}/api/v1`, and it
 * declares a `read:<resource>` and a `write:<resource>` scope for each resource under /api/v1.
 * Callers get these scopes as for any API: machine clients through `clients grant`, people
 * through roles (the built-in `admin` role holds them all).
 */

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
