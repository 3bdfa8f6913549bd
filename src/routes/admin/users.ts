/**
 * /admin/users: every user (username, email, where the account comes from, disabled, roles),
 * searchable by name and email, and a form that creates a local user with an initial password
 * (the rules of `latchkey users add`). One user's own page is in user.ts.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { operatorEnteredUser } from '../../directory/local_users.js';
import { z } from 'zod';
import { AdminInputError, validEmail, validName, validPassword, validUsername } from '../../directory/validation.js';
import { epochSeconds } from '../../clock.js';
import { hashPassword } from '../../crypto/password.js';
import { randomUuid } from '../../crypto/secrets.js';
import { parseFields } from '../../http/form.js';
import { DuplicateError, type UserRecord } from '../../store/store.js';
import {
  adminAudit,
  adminForm,
  adminGate,
  checked,
  doneRedirect,
  hereOf,
  printable,
  renderAdmin,
  type Admin,
  type Notice,
} from '../../console/console_page.js';

/** The list shows at most this many; a search narrows it. */
const shownAtMost = 200;

/** The email as `users add` takes it (whose message for none names a command-line flag). */
function emailOf(value: string): string {
  if (value === '') throw new AdminInputError('Enter an email address.');
  return validEmail(printable(value, 'The email'));
}

const listQuery = z.object({ q: z.string().max(256).optional() });
const createForm = z.object({
  csrf_token: z.string().max(256).optional(),
  username: z.string().max(1024).default(''),
  email: z.string().max(1024).default(''),
  name: z.string().max(1024).default(''),
  password: z.string().max(4096).default(''),
});

interface CreateValues {
  username: string;
  email: string;
  name: string;
}

export async function adminUserRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { store, clock } = services;
  const page = { config: { page: true } };

  async function showUsers(request: FastifyRequest, reply: FastifyReply, search: string, notice?: Notice, values?: CreateValues, status = 200) {
    const users = await store.listUsers();
    const needle = search.trim().toLowerCase();
    const matching = needle === '' ? users : users.filter((u) => [u.username, u.email, u.name ?? ''].some((text) => text.toLowerCase().includes(needle)));
    return renderAdmin(
      request,
      reply,
      services,
      'users',
      'users',
      {
        title: 'Users',
        search,
        total: users.length,
        matching: matching.length,
        users: matching.slice(0, shownAtMost).map((u: UserRecord) => ({
          id: u.id,
          username: u.username,
          email: u.email,
          name: u.name ?? '',
          source: u.source,
          disabled: u.disabled,
          roles: u.roles,
        })),
        shownAtMost,
        values: values ?? { username: '', email: '', name: '' },
        notice,
      },
      status,
    );
  }

  app.get('/admin/users', page, async (request, reply) => {
    const gate = await adminGate(request, reply, services, hereOf(request, '/admin/users'));
    if (!gate.ok) return gate.reply;
    const query = parseFields(listQuery, request.query);
    return showUsers(request, reply, query.q ?? '');
  });

  app.post('/admin/users', page, async (request, reply) => {
    const gate = await adminForm(request, reply, services, createForm, '/admin/users');
    if (!gate.ok) return gate.reply;
    const { form, admin } = gate;
    const values = { username: form.username.trim(), email: form.email.trim(), name: form.name };
    const valid = checked(
      () => ({
        username: validUsername(values.username),
        email: emailOf(values.email),
        name: validName(printable(values.name, 'The name')),
        password: validPassword(form.password),
      }),
      'create',
    );
    if (!valid.ok) return showUsers(request, reply, '', valid.notice, values, 400);
    return createUser(request, reply, admin, valid.value, values);
  });

  async function createUser(
    request: FastifyRequest,
    reply: FastifyReply,
    admin: Admin,
    user: { username: string; email: string; name: string | undefined; password: string },
    values: CreateValues,
  ) {
    const taken = () => showUsers(request, reply, '', { kind: 'error', text: `The username ${user.username} is taken.`, about: 'create' }, values, 409);
    if (await store.findUserByUsername(user.username)) return taken();
    const id = randomUuid();
    const now = epochSeconds(clock);
    try {
      await store.createUser(
        operatorEnteredUser({
          id,
          username: user.username,
          email: user.email,
          name: user.name,
          passwordHash: await hashPassword(user.password),
          profile: {},
          now,
        }),
      );
    } catch (err) {
      if (err instanceof DuplicateError) return taken();
      throw err;
    }
    adminAudit(request, admin, 'user.created', { userId: id, username: user.username });
    return doneRedirect(reply, `/admin/users/${encodeURIComponent(id)}`, 'created');
  }
}
