/**
 * A person as the management API answers it (`GET /api/v1/users`) and as `latchkey users list
 * --json` prints it: one shape for both, so a command run against the database and the same
 * command run through the API (`--server`) print the same thing. Field names are the
 * configuration file's (snake_case); times are ISO 8601 UTC to the second.
 */
import { z } from 'zod';
import type { Store, UserIdentityRecord, UserRecord } from '../store/store.js';

export interface UserView {
  id: string;
  username: string;
  email: string;
  name: string | null;
  disabled: boolean;
  source: string;
  groups: string[];
  roles: string[];
  /** Roles granted by hand (`users grant`). */
  direct_roles: string[];
  /** Roles held through upstream groups (until a sign-in without the group). */
  group_roles: string[];
  /** The upstream identities that sign the person in. */
  identities: Array<{ connector: string; subject: string }>;
  profile: UserRecord['profile'];
  created_at: string;
  updated_at: string;
}

/** The view's schema, for the OpenAPI document. */
export const userViewSchema = z.object({
  id: z.string(),
  username: z.string(),
  email: z.string(),
  name: z.string().nullable(),
  disabled: z.boolean(),
  source: z.string(),
  groups: z.array(z.string()),
  roles: z.array(z.string()),
  direct_roles: z.array(z.string()),
  group_roles: z.array(z.string()),
  identities: z.array(z.object({ connector: z.string(), subject: z.string() })),
  profile: z.record(z.string(), z.unknown()),
  created_at: z.string(),
  updated_at: z.string(),
});

export function isoSeconds(epochSeconds: number): string {
  return new Date(epochSeconds * 1000).toISOString().replace('.000Z', 'Z');
}

/** The views of these users, in the order given (identities and role sources read in one go each). */
export async function userViews(store: Store, users: readonly UserRecord[], identities?: readonly UserIdentityRecord[]): Promise<UserView[]> {
  const all = identities ?? (await store.listIdentities(undefined));
  const linked = new Map<string, Array<{ connector: string; subject: string }>>();
  for (const i of all) linked.set(i.userId, [...(linked.get(i.userId) ?? []), { connector: i.connectorId, subject: i.subject }]);
  const sources = await Promise.all(users.map((u) => store.listUserRoleSources(u.id)));
  return users.map((u, i) => ({
    id: u.id,
    username: u.username,
    email: u.email,
    name: u.name ?? null,
    disabled: u.disabled,
    source: u.source,
    groups: u.groups,
    roles: u.roles,
    direct_roles: sources[i]?.direct ?? [],
    group_roles: sources[i]?.group ?? [],
    identities: linked.get(u.id) ?? [],
    profile: u.profile,
    created_at: isoSeconds(u.createdAt),
    updated_at: isoSeconds(u.updatedAt),
  }));
}
