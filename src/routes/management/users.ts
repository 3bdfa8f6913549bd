/**
 * GET /api/v1/users: the people, in username order (as `users list` prints them), a page at a time (`limit`, `cursor`), as
 * `{ data, next }` where `next` is the cursor of the following page or null. Needs `read:users`.
 * A key cursor (the last username seen, base64url) neither skips nor repeats a person when
 * another is added or removed between pages.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { OAuthError } from '../../errors.js';
import { authorizeManagementCall } from '../../management/authorization.js';
import { problemContentType, refusalProblem } from '../../management/refusal_problem.js';
import { userViews } from '../../management/user_view.js';

const maxPageSize = 200;
const defaultPageSize = 50;

const listQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(maxPageSize).optional(),
  cursor: z.string().max(1024).optional(),
});

function decodeCursor(cursor: string): string | undefined {
  const key = Buffer.from(cursor, 'base64url').toString('utf8');
  return key !== '' && Buffer.from(key, 'utf8').toString('base64url') === cursor ? key : undefined;
}

/**
 * The order of `users list` on the database (SQL `lower(username COLLATE "C")`: ASCII letters
 * folded, then byte order), so that a list through the API comes out in the same order.
 */
function orderKey(username: string): string {
  return username.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

function byOrderKey(a: string, b: string): number {
  return Buffer.compare(Buffer.from(orderKey(a), 'utf8'), Buffer.from(orderKey(b), 'utf8')) || Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

function badRequest(detail: string): OAuthError {
  return new OAuthError('invalid_request', detail, { status: 400 });
}

export async function managementUserRoutes(app: FastifyInstance): Promise<void> {
  const { store } = app.services;

  app.setErrorHandler((error, _request, reply) => {
    // Refusals are problem details; anything else goes to the server's own handler.
    if (!(error instanceof OAuthError)) throw error;
    void reply.code(error.status).headers(error.headers).header('cache-control', 'no-store').type(problemContentType).send(refusalProblem(error));
  });

  app.get('/users', async (request, reply) => {
    await authorizeManagementCall(request, 'read:users');
    const query = listQuery.safeParse(request.query);
    if (!query.success) throw badRequest(`limit is 1-${maxPageSize}; cursor is one this API gave.`);
    const after = query.data.cursor === undefined ? undefined : decodeCursor(query.data.cursor);
    if (query.data.cursor !== undefined && after === undefined) throw badRequest('The cursor is not one this API gave.');
    const limit = query.data.limit ?? defaultPageSize;
    const sorted = (await store.listUsers()).sort((a, b) => byOrderKey(a.username, b.username));
    const rest = after === undefined ? sorted : sorted.filter((u) => byOrderKey(u.username, after) > 0);
    const users = rest.slice(0, limit);
    const last = users.at(-1);
    reply.header('cache-control', 'no-store');
    return {
      data: await userViews(store, users),
      next: rest.length > limit && last !== undefined ? Buffer.from(last.username, 'utf8').toString('base64url') : null,
    };
  });
}
