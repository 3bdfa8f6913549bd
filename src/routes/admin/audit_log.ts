/**
 * /admin/audit: the stored audit log, newest first — time (UTC), event, actor, user, client,
 * address, details — with filters as GET fields: `since` and `until` (datetime-local, read as
 * UTC, or ISO 8601 with a zone), `user` (a username or a user id), `client`, `event` (an exact
 * name, or a prefix ending in '.' such as `user.`), and paging to older events with `before` (the
 * id of the last event shown).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { auditQueryOf } from '../../audit/audit_query.js';
import { AdminInputError } from '../../directory/validation.js';
import { parseFields } from '../../http/form.js';
import type { AuditEventQuery, AuditEventRecord } from '../../store/store.js';
import { adminGate, hereOf, renderAdmin, storedKey, type Notice } from '../../console/console_page.js';

/** Events on one page: enough to scan, few enough for a phone to scroll through. */
const pageSize = 25;

const filterQuery = z.object({
  since: z.string().max(64).default(''),
  until: z.string().max(64).default(''),
  user: storedKey(256).default(''),
  client: storedKey(256).default(''),
  actor: storedKey(256).default(''),
  event: z.string().max(128).default(''),
  before: z.string().max(32).default(''),
});
type Filters = z.infer<typeof filterQuery>;

/** Event families offered as suggestions in the event field. */
const eventPrefixes = ['admin.', 'api.', 'client.', 'connector.', 'consent.', 'key.', 'role.', 'second_factor.', 'session.', 'signin.', 'token.', 'user.'];

/** The store's query for these filters and page (audit/audit_query.ts, as the management API's). */
async function queryOf(app: FastifyInstance, filters: Filters): Promise<AuditEventQuery> {
  const query = await auditQueryOf(app.services.store, filters);
  const cursor = filters.before.trim();
  if (cursor !== '' && !/^\d{1,15}$/.test(cursor)) throw new AdminInputError('The page cursor is not valid.');
  return { ...query, ...(cursor === '' ? {} : { beforeId: Number(cursor) }), limit: pageSize + 1 };
}

/** The event's own details as short `name: value` lines. */
function detailLines(details: Record<string, unknown>): string[] {
  const shown = (value: unknown) =>
    typeof value === 'string'
      ? value
      : Array.isArray(value) && value.every((v) => typeof v === 'string')
        ? value.join(', ') || '(none)'
        : JSON.stringify(value);
  return Object.entries(details).map(([name, value]) => `${name}: ${shown(value)}`.slice(0, 300));
}

function timeOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}

export async function adminAuditLogRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { store } = services;

  async function showLog(
    request: FastifyRequest,
    reply: FastifyReply,
    filters: Filters,
    events: AuditEventRecord[],
    more: boolean,
    notice?: Notice,
    status = 200,
  ) {
    // Usernames for the user ids on this page (at most one lookup per distinct id).
    const ids = [...new Set(events.map((e) => e.userId).filter((id): id is string => id !== undefined))];
    const users = new Map((await Promise.all(ids.map((id) => store.findUserById(id)))).filter((u) => u !== undefined).map((u) => [u.id, u.username]));
    const link = (changes: Partial<Filters>) => {
      const query = new URLSearchParams();
      for (const [name, value] of Object.entries({ ...filters, ...changes })) if (value.trim() !== '') query.set(name, value.trim());
      const text = query.toString();
      return text === '' ? '/admin/audit' : `/admin/audit?${text}`;
    };
    const last = events.at(-1);
    return renderAdmin(
      request,
      reply,
      services,
      'audit',
      'audit',
      {
        title: 'Audit log',
        filters,
        eventPrefixes,
        filtered: Object.entries(filters).some(([name, value]) => name !== 'before' && value.trim() !== ''),
        events: events.map((e) => ({
          id: e.id,
          time: timeOf(e.at),
          event: e.event,
          actor: e.actor ?? '',
          userId: e.userId,
          username: e.userId === undefined ? undefined : users.get(e.userId),
          clientId: e.clientId,
          ip: e.ip ?? '',
          details: detailLines(e.details),
        })),
        older: more && last ? link({ before: String(last.id) }) : undefined,
        newest: filters.before.trim() === '' ? undefined : link({ before: '' }),
        notice,
      },
      status,
    );
  }

  app.get('/admin/audit', { config: { page: true } }, async (request, reply) => {
    const gate = await adminGate(request, reply, services, hereOf(request, '/admin/audit'));
    if (!gate.ok) return gate.reply;
    const filters = parseFields(filterQuery, request.query);
    let query: AuditEventQuery;
    try {
      query = await queryOf(app, filters);
    } catch (err) {
      if (!(err instanceof AdminInputError)) throw err;
      return showLog(request, reply, filters, [], false, { kind: 'error', text: err.message, about: 'filters' }, 400);
    }
    // What is still batched is written first: the log shows what just happened.
    await services.auditTrail.flush();
    const found = await store.listAuditEvents(query);
    return showLog(request, reply, filters, found.slice(0, pageSize), found.length > pageSize);
  });
}
