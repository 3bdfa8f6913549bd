/**
 * An audit event as the management API answers it (`/api/v1/audit-events`): what the console's
 * Audit log page shows of it — time, event, actor, person, client, address and the event's own
 * details — with the configuration file's snake_case names. Events are read-only here.
 */
import { z } from 'zod';
import type { AuditEventRecord } from '../store/store.js';
import { listQuerySchema } from './pagination.js';
import { isoSeconds } from './user_view.js';

export const auditEventViewSchema = z.object({
  /** Increasing: a newer event has a larger id. */
  id: z.number().int(),
  time: z.string(),
  event: z.string(),
  /** Who acted for someone else (an admin's username, `cli`, an API caller); null when people act for themselves. */
  actor: z.string().nullable(),
  user_id: z.string().nullable(),
  /** The person's username now, when the user still exists. */
  username: z.string().nullable(),
  client_id: z.string().nullable(),
  ip: z.string().nullable(),
  details: z.record(z.string(), z.unknown()),
});
export type AuditEventView = z.infer<typeof auditEventViewSchema>;

export const auditEventIdParamsSchema = z.strictObject({ id: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER) });

/** The console's filters, as query fields (ISO 8601 times). */
export const auditEventListQuerySchema = listQuerySchema.extend({
  event: z.string().max(128).optional(),
  actor: z.string().max(256).optional(),
  since: z.string().max(64).optional(),
  until: z.string().max(64).optional(),
  user: z.string().max(256).optional(),
  client: z.string().max(256).optional(),
});

export function auditEventView(event: AuditEventRecord, usernames: ReadonlyMap<string, string>): AuditEventView {
  return {
    id: event.id,
    time: isoSeconds(Math.floor(event.at / 1000)),
    event: event.event,
    actor: event.actor ?? null,
    user_id: event.userId ?? null,
    username: event.userId === undefined ? null : (usernames.get(event.userId) ?? null),
    client_id: event.clientId ?? null,
    ip: event.ip ?? null,
    details: event.details,
  };
}

/** The page cursor: the id of the last event answered (newest first, the next page holds older ones). */
export function auditCursor(id: number): string {
  return Buffer.from(String(id), 'utf8').toString('base64url');
}

/** The id a cursor names, or undefined when it is not one this API gave. */
export function auditCursorId(cursor: string): number | undefined {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  return /^[1-9]\d{0,14}$/.test(text) && auditCursor(Number(text)) === cursor ? Number(text) : undefined;
}
