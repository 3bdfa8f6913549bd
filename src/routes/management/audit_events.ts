/**
 * /api/v1/audit-events: the audit log, read-only, newest first, with the console's filters
 * (audit/audit_query.ts). The cursor is the id of the last event answered, so a page stays the
 * same while new events arrive: they are newer than every page already read. Nothing writes events
 * through the API: `write:audit-events` is declared but no operation takes it.
 */
import type { FastifyInstance } from 'fastify';
import { AuditFilterError, auditQueryOf } from '../../audit/audit_query.js';
import {
  auditCursor,
  auditCursorId,
  auditEventIdParamsSchema,
  auditEventListQuerySchema,
  auditEventView,
  auditEventViewSchema,
} from '../../management/audit_event_resource.js';
import { etagOf } from '../../management/etag.js';
import { defineOperation } from '../../management/operations.js';
import { defaultPageSize, listAnswerSchema } from '../../management/pagination.js';
import { notFound, Problem, problemSchema } from '../../management/problem.js';
import type { AuditEventRecord } from '../../store/store.js';

export async function managementAuditEventRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { store } = services;
  const tag = 'audit-events';

  /** Usernames of the people in these events (one lookup per distinct id). */
  async function usernamesOf(events: readonly AuditEventRecord[]): Promise<Map<string, string>> {
    const ids = [...new Set(events.map((e) => e.userId).filter((id): id is string => id !== undefined))];
    const users = await Promise.all(ids.map((id) => store.findUserById(id)));
    return new Map(users.filter((u) => u !== undefined).map((u) => [u.id, u.username]));
  }

  defineOperation(app, {
    method: 'GET',
    path: '/audit-events',
    operationId: 'listAuditEvents',
    summary: "List audit events, newest first, with the filters of the console's Audit log page",
    tag,
    scope: 'read:audit-events',
    query: auditEventListQuerySchema,
    responses: { 200: { description: 'A page of audit events', schema: listAnswerSchema(auditEventViewSchema) } },
    async handler({ query }) {
      let filters;
      try {
        filters = await auditQueryOf(store, {
          since: query.since ?? '',
          until: query.until ?? '',
          user: query.user ?? '',
          client: query.client ?? '',
          actor: query.actor ?? '',
          event: query.event ?? '',
        });
      } catch (err) {
        if (err instanceof AuditFilterError)
          throw new Problem(400, 'invalid-input', 'The query is not valid: see errors.', [{ path: `/${err.filter}`, message: err.message }]);
        throw err;
      }
      const beforeId = query.cursor === undefined ? undefined : auditCursorId(query.cursor);
      if (query.cursor !== undefined && beforeId === undefined) throw new Problem(400, 'invalid-cursor', 'The cursor is not one this API gave.');
      const limit = query.limit ?? defaultPageSize;
      // What is still batched is written first: the list shows what just happened.
      await services.auditTrail.flush();
      const found = await store.listAuditEvents({ ...filters, ...(beforeId === undefined ? {} : { beforeId }), limit: limit + 1 });
      const events = found.slice(0, limit);
      const usernames = await usernamesOf(events);
      const last = events.at(-1);
      return {
        status: 200,
        body: { data: events.map((e) => auditEventView(e, usernames)), next: found.length > limit && last !== undefined ? auditCursor(last.id) : null },
      };
    },
  });

  defineOperation(app, {
    method: 'GET',
    path: '/audit-events/{id}',
    operationId: 'getAuditEvent',
    summary: 'Read one audit event',
    tag,
    scope: 'read:audit-events',
    params: auditEventIdParamsSchema,
    etag: true,
    responses: { 200: { description: 'The audit event', schema: auditEventViewSchema }, 404: { description: 'No such event', schema: problemSchema } },
    async handler({ params }) {
      await services.auditTrail.flush();
      const [event] = await store.listAuditEvents({ beforeId: params.id + 1, limit: 1 });
      if (event?.id !== params.id) throw notFound(`audit event ${params.id}`);
      const view = auditEventView(event, await usernamesOf([event]));
      return { status: 200, headers: { etag: etagOf(view) }, body: view };
    },
  });
}
