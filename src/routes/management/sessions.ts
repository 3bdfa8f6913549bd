/**
 * /api/v1/sessions: every live sign-in — browser sessions and apps' refresh-token families — as
 * `latchkey sessions list` and the console's Sessions page show them (management/session_resource.ts),
 * and `DELETE /sessions/{id}`, which ends one as `sessions revoke` does (account/end_sign_in.ts);
 * an ended browser session is told to the clients that asked for Back-Channel Logout, as the
 * console does.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { endSignIn } from '../../account/end_sign_in.js';
import { epochSeconds } from '../../clock.js';
import { notifyBackchannelLogoutLater } from '../../oauth/backchannel_logout.js';
import { checkIfMatch, etagOf } from '../../management/etag.js';
import { defineOperation } from '../../management/operations.js';
import { listAnswerSchema, listQuerySchema, page } from '../../management/pagination.js';
import { notFound, problemSchema } from '../../management/problem.js';
import { withResourceLock } from '../../management/resource_lock.js';
import { sessionIdParamsSchema, sessionViews, sessionViewSchema, type SessionView } from '../../management/session_resource.js';

const sessionListQuerySchema = listQuerySchema.extend({
  /** Only this person's sign-ins (a username). */
  user: z.string().min(1).max(256).optional(),
  /** Only the sign-ins of this client (apps; browser sessions belong to no client). */
  client: z.string().min(1).max(256).optional(),
});

export async function managementSessionRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { store, clock } = services;
  const tag = 'sessions';

  async function current(id: string): Promise<{ view: SessionView; etag: string }> {
    const view = (await sessionViews(store, {}, epochSeconds(clock))).find((s) => s.id === id);
    if (!view) throw notFound(`live sign-in "${id.slice(0, 80)}"`);
    return { view, etag: etagOf(view) };
  }

  defineOperation(app, {
    method: 'GET',
    path: '/sessions',
    operationId: 'listSessions',
    summary: 'List live sign-ins (browser sessions and apps), in id order; `latchkey sessions list` shows them most recently used first',
    tag,
    scope: 'read:sessions',
    query: sessionListQuerySchema,
    responses: {
      200: { description: 'A page of live sign-ins', schema: listAnswerSchema(sessionViewSchema) },
      404: { description: 'No such user or client (the filter)', schema: problemSchema },
    },
    async handler({ query }) {
      const user = query.user === undefined ? undefined : await store.findUserByUsername(query.user);
      if (query.user !== undefined && !user) throw notFound(`user "${query.user}"`);
      if (query.client !== undefined && !(await store.findClient(query.client))) throw notFound(`client "${query.client}"`);
      const views = await sessionViews(store, { userId: user?.id, clientId: query.client }, epochSeconds(clock));
      return { status: 200, body: page(views, (s) => s.id, { limit: query.limit, cursor: query.cursor }) };
    },
  });

  defineOperation(app, {
    method: 'GET',
    path: '/sessions/{id}',
    operationId: 'getSession',
    summary: 'Read a live sign-in',
    tag,
    scope: 'read:sessions',
    params: sessionIdParamsSchema,
    etag: true,
    responses: { 200: { description: 'The sign-in', schema: sessionViewSchema }, 404: { description: 'No live sign-in with this id', schema: problemSchema } },
    async handler({ params }) {
      const { view, etag } = await current(params.id);
      return { status: 200, headers: { etag }, body: view };
    },
  });

  defineOperation(app, {
    method: 'DELETE',
    path: '/sessions/{id}',
    operationId: 'endSession',
    summary: 'End a sign-in (as `latchkey sessions revoke`); a browser session is told to the clients registered for Back-Channel Logout',
    tag,
    scope: 'write:sessions',
    params: sessionIdParamsSchema,
    etag: true,
    responses: {
      204: { description: 'Ended' },
      404: { description: 'No live sign-in with this id', schema: problemSchema },
      412: { description: 'The sign-in changed since the ETag given', schema: problemSchema },
    },
    async handler({ request, params, audit }) {
      return withResourceLock(store, `session:${params.id}`, async () => {
        const { etag } = await current(params.id);
        checkIfMatch(request, etag);
        const ended = await endSignIn(store, params.id, epochSeconds(clock));
        if (!ended) throw notFound(`live sign-in "${params.id.slice(0, 80)}"`);
        if (ended.kind === 'browser') {
          notifyBackchannelLogoutLater(services, [ended.session], request);
          audit('session.revoked', { kind: 'browser', userId: ended.session.userId, sessionId: ended.session.id });
        } else {
          const { family } = ended;
          audit('session.revoked', { kind: 'app', userId: family.userId, clientId: family.clientId, familyId: family.familyId });
        }
        return { status: 204 };
      });
    },
  });
}
