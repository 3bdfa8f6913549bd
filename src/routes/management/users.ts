/**
 * /api/v1/users: the people, in the order `users list` prints them, a page at a time, each as
 * `users list --json` prints it (management/user_view.ts: one shape for both).
 */
import type { FastifyInstance } from 'fastify';
import { listAnswerSchema, listQuerySchema, page } from '../../management/pagination.js';
import { defineOperation } from '../../management/operations.js';
import { userViews, userViewSchema } from '../../management/user_view.js';

/**
 * The order of `users list` on the database (SQL `lower(username COLLATE "C")`: ASCII letters
 * folded, then code order), the username itself after it so the key is unique: a page cursor.
 */
function orderKey(username: string): string {
  return `${username.replace(/[A-Z]/g, (c) => c.toLowerCase())}\u0000${username}`;
}

export async function managementUserRoutes(app: FastifyInstance): Promise<void> {
  const { store } = app.services;

  defineOperation(app, {
    method: 'GET',
    path: '/users',
    operationId: 'listUsers',
    summary: 'List people, in the order `latchkey users list` prints them',
    tag: 'users',
    scope: 'read:users',
    query: listQuerySchema,
    responses: { 200: { description: 'A page of people', schema: listAnswerSchema(userViewSchema) } },
    async handler({ query }) {
      const result = page(await store.listUsers(), (u) => orderKey(u.username), query);
      return { status: 200, body: { data: await userViews(store, result.data), next: result.next } };
    },
  });
}
