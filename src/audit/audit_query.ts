/**
 * The audit log's filters as people type them — on the console's Audit log page and as the
 * management API's `GET /api/v1/audit-events` query — turned into the store's query: `since` and
 * `until` (a datetime-local value read as UTC, a date, or ISO 8601 with a zone), `user` (a username
 * or a user id), `client`, `actor`, and `event` (an exact name, or a prefix ending in '.').
 */
import { AdminInputError } from '../directory/validation.js';
import type { AuditEventQuery, Store } from '../store/store.js';

export interface AuditFilters {
  since: string;
  until: string;
  user: string;
  client: string;
  actor: string;
  event: string;
}

/** A filter that is not valid, naming it (`since`, `until`, `event`). */
export class AuditFilterError extends AdminInputError {
  constructor(
    readonly filter: keyof AuditFilters,
    message: string,
  ) {
    super(message);
  }
}

/** A datetime-local value (read as UTC), a date, or ISO 8601 with a zone → epoch milliseconds. */
export function timeFilter(text: string, what: string): number | undefined {
  const value = text.trim();
  if (value === '') return undefined;
  const match = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?))?(Z|[+-]\d{2}:\d{2})?$/.exec(value);
  const at = match ? Date.parse(`${match[1]}T${match[2] ?? '00:00'}${match[3] ?? 'Z'}`) : Number.NaN;
  // Date.parse rolls 2026-02-30 over to March: a day that does not exist is refused instead.
  const realDay = Number.isFinite(at) && match !== null && new Date(Date.parse(`${match[1]}T00:00Z`)).toISOString().slice(0, 10) === match[1];
  if (!realDay) throw new AdminInputError(`${what} must be a date and time such as 2026-11-23T17:30 (UTC) or 2026-11-23T17:30:00+01:00.`);
  return at;
}

function checkedTime(text: string, filter: 'since' | 'until', what: string): number | undefined {
  try {
    return timeFilter(text, what);
  } catch (err) {
    if (err instanceof AdminInputError) throw new AuditFilterError(filter, err.message);
    throw err;
  }
}

/**
 * The store's query for these filters (a username is looked up to its user id), without its page:
 * the caller adds `beforeId` and `limit`. Throws AdminInputError naming the filter that is wrong.
 */
export async function auditQueryOf(store: Store, filters: AuditFilters): Promise<Omit<AuditEventQuery, 'limit' | 'beforeId'>> {
  const since = checkedTime(filters.since, 'since', 'Since');
  const until = checkedTime(filters.until, 'until', 'Until');
  if (since !== undefined && until !== undefined && until <= since) throw new AuditFilterError('until', 'Until must be later than since.');
  const event = filters.event.trim();
  if (event !== '' && !/^[a-z0-9_]+(\.[a-z0-9_]+)*\.?$/.test(event))
    throw new AuditFilterError('event', 'The event must be an event name such as user.created, or a prefix such as user.');
  const user = filters.user.trim();
  const userId = user === '' ? undefined : ((await store.findUserByUsername(user))?.id ?? user);
  const client = filters.client.trim();
  const actor = filters.actor.trim();
  return {
    ...(actor === '' ? {} : { actor }),
    ...(since === undefined ? {} : { since }),
    ...(until === undefined ? {} : { until }),
    ...(userId === undefined ? {} : { userId }),
    ...(client === '' ? {} : { clientId: client }),
    ...(event === '' ? {} : { event }),
  };
}
