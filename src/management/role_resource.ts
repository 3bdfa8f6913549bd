/**
 * The `roles` resource: a role as `latchkey roles list --json` shows it, with its permissions as
 * `{ api, scope }` pairs (the configuration file writes each as `<api>:<scope>`; a pair needs no
 * resolving against the registered APIs), its upstream groups and how many people hold it. Bodies
 * are checked by the rules of `roles add` and `roles update` (directory/roles.ts).
 */
import { z } from 'zod';
import { roleSchema } from '../config_file/schema.js';
import type { Permission, RoleRecord, Store, UserRecord } from '../store/store.js';
import { managementScopes } from './management_api.js';
import { Problem } from './problem.js';
import { isoSeconds } from './user_view.js';

const fields = roleSchema.shape;

export const permissionSchema = z.strictObject({ api: z.string().min(1).max(2048), scope: z.string().min(1).max(128) });

export const roleCreateSchema = z.strictObject({
  name: fields.name,
  description: fields.description,
  permissions: z.array(permissionSchema).max(1000).default([]),
  groups: fields.groups,
});

export const rolePatchSchema = z.strictObject({
  /** null removes it. */
  description: fields.description.unwrap().nullable().optional(),
  /** Replaces the role's permissions as a whole. */
  permissions: z.array(permissionSchema).max(1000).optional(),
  /** Replaces the role's groups as a whole. */
  groups: fields.groups.unwrap().optional(),
});

export const roleNameParamsSchema = z.strictObject({ name: z.string().min(1).max(64) });

export const roleViewSchema = z.object({
  name: z.string(),
  description: z.string().nullable(),
  permissions: z.array(z.object({ api: z.string(), scope: z.string() })),
  groups: z.array(z.string()),
  built_in: z.boolean(),
  /** How many people hold it, by hand or through a group. */
  members: z.number().int(),
  /** The configuration file that declares the role; changes through the API are refused then. */
  managed_by: z.string().nullable(),
  created_at: z.string(),
});
export type RoleView = z.infer<typeof roleViewSchema>;

export function roleView(role: RoleRecord): RoleView {
  return {
    name: role.name,
    description: role.description ?? null,
    permissions: role.permissions.map((p) => ({ api: p.api, scope: p.scope })),
    groups: role.groups,
    built_in: role.builtIn,
    members: role.members,
    managed_by: role.managedBy ?? null,
    created_at: isoSeconds(role.createdAt),
  };
}

export const roleMemberSchema = z.object({
  username: z.string(),
  email: z.string(),
  name: z.string().nullable(),
  disabled: z.boolean(),
  /** Granted by hand (`users grant`). */
  direct: z.boolean(),
  /** The person's upstream groups that grant the role (until a sign-in without them). */
  through_groups: z.array(z.string()),
});
export type RoleMember = z.infer<typeof roleMemberSchema>;

/** How each member holds the role: by hand, through which of their groups, or both. */
export async function roleMembers(store: Store, role: RoleRecord, members: readonly UserRecord[]): Promise<RoleMember[]> {
  const sources = await Promise.all(members.map((u) => store.listUserRoleSources(u.id)));
  return members.map((u, i) => ({
    username: u.username,
    email: u.email,
    name: u.name ?? null,
    disabled: u.disabled,
    direct: sources[i]?.direct.includes(role.name) ?? false,
    through_groups: u.groups.filter((g) => role.groups.includes(g)).sort(),
  }));
}

/**
 * The permissions as `roles add --permission` checks them: each API exists and declares the scope.
 * Distinct, sorted by api then scope, as the store keeps them; the issue path points at the
 * offending permission.
 */
export async function checkedPermissions(store: Store, permissions: readonly Permission[]): Promise<Permission[]> {
  const apis = new Map((await store.listApis()).map((api) => [api.identifier, api]));
  const errors: { path: string; message: string }[] = [];
  const seen = new Map<string, Permission>();
  for (const [index, permission] of permissions.entries()) {
    const api = apis.get(permission.api);
    if (!api) errors.push({ path: `/permissions/${index}/api`, message: `no API "${permission.api}"` });
    else if (!api.scopes.includes(permission.scope))
      errors.push({ path: `/permissions/${index}/scope`, message: `API ${api.identifier} declares no scope "${permission.scope}"` });
    else seen.set(`${permission.api}\u0000${permission.scope}`, { api: permission.api, scope: permission.scope });
  }
  if (errors.length > 0) throw new Problem(400, 'invalid-input', 'The request body is not valid: see errors.', errors);
  return [...seen.values()].sort((a, b) => (a.api === b.api ? (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : 0) : a.api < b.api ? -1 : 1));
}

/**
 * Why new permissions of the built-in `admin` role are refused, or undefined: it keeps every scope
 * of the management API (`managementApi`, `{issuer}/api/v1`), or its members would lose the API
 * (and the console's people their way to manage it) until the next start puts them back.
 */
export function adminPermissionsRefusal(managementApi: string, permissions: readonly Permission[]): string | undefined {
  const held = new Set(permissions.filter((p) => p.api === managementApi).map((p) => p.scope));
  const lost = managementScopes.filter((s) => !held.has(s));
  return lost.length === 0 ? undefined : `The built-in admin role keeps every scope of the management API: ${lost.join(', ')} cannot be removed.`;
}
