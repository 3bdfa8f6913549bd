/**
 * A live sign-in as the management API answers it (`/api/v1/sessions`), as `latchkey sessions
 * list --json` prints it and as the console's Sessions page lists it: a browser session or an app's
 * refresh-token family, with its person, the device named as people know it
 * (http/device_description.ts), where it was approved from, and its dates. One shape for all, so
 * the command prints the same thing against the database and through `--server`.
 */
import { z } from 'zod';
import { deviceName } from '../http/device_description.js';
import type { Store } from '../store/store.js';
import { isoSeconds } from './user_view.js';

export const sessionViewSchema = z.object({
  id: z.string(),
  /** browser: a session cookie; app: a refresh-token family (a device, a command line, an application). */
  kind: z.enum(['browser', 'app']),
  /** The person's username. */
  user: z.string(),
  client_id: z.string().nullable(),
  /** The address it was approved from. */
  from: z.string().nullable(),
  device: z.string(),
  /** The raw User-Agent. */
  software: z.string().nullable(),
  created_at: z.string(),
  last_used_at: z.string(),
  expires_at: z.string(),
});
export type SessionView = z.infer<typeof sessionViewSchema>;

export const sessionIdParamsSchema = z.strictObject({ id: z.string().min(1).max(256) });

export interface SessionFilter {
  userId?: string | undefined;
  /** Only the sign-ins of this client (browser sessions belong to no client). */
  clientId?: string | undefined;
}

/** Most recently used first, then by id (a stable order for equal times). */
export function sessionOrder(a: SessionView, b: SessionView): number {
  return a.last_used_at < b.last_used_at ? 1 : a.last_used_at > b.last_used_at ? -1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** Every live sign-in matching the filter at `now`, most recently used first. */
export async function sessionViews(store: Store, filter: SessionFilter, now: number): Promise<SessionView[]> {
  const [sessions, families, users] = await Promise.all([
    filter.clientId === undefined ? store.listSessions(filter.userId, now) : Promise.resolve([]),
    store.listRefreshFamilies(filter.userId, now),
    store.listUsers(),
  ]);
  const usernameOf = new Map(users.map((u) => [u.id, u.username]));
  return [
    ...sessions.map((s) => ({
      id: s.id,
      kind: 'browser' as const,
      user: usernameOf.get(s.userId) ?? s.userId,
      client_id: null,
      from: s.ip ?? null,
      device: deviceName(s.userAgent),
      software: s.userAgent ?? null,
      created_at: isoSeconds(s.createdAt),
      last_used_at: isoSeconds(s.lastSeenAt ?? s.createdAt),
      expires_at: isoSeconds(s.expiresAt),
    })),
    ...families
      .filter((f) => filter.clientId === undefined || f.clientId === filter.clientId)
      .map((f) => ({
        id: f.familyId,
        kind: 'app' as const,
        user: usernameOf.get(f.userId) ?? f.userId,
        client_id: f.clientId,
        from: f.approvedIp ?? null,
        device: deviceName(f.approvedUserAgent),
        software: f.approvedUserAgent ?? null,
        created_at: isoSeconds(f.createdAt),
        last_used_at: isoSeconds(f.lastUsedAt),
        expires_at: isoSeconds(f.expiresAt),
      })),
  ].sort(sessionOrder);
}
