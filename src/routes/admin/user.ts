/**
 * /admin/users/:id: one user — their profile, roles, second factors, linked upstream identities,
 * and every live sign-in (browser sessions and refresh-token families) — and what an administrator
 * may do about them: disable or enable the account (disabling ends everything they hold), set a
 * new password (which ends their sign-ins), grant and revoke roles, end one sign-in or all of
 * them, remove their second factors or give someone without one a one-time link to set up their
 * first (which an account holding `admin` needs), unlink an upstream identity (which ends their
 * sign-ins, and keeps that upstream account out: connectors/linked_identities.ts) or let a removed
 * one sign in again. Ended browser sessions are told to the clients that asked for Back-Channel
 * Logout; a new password and removed factors are told to the person by mail. An administrator
 * cannot disable their own account, take away their own admin role or unlink their own identities
 * here (they would lock themselves out of the console).
 */
import { signInRows } from '../../http/sign_ins.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { adminRole } from '../../directory/roles.js';
import { validPassword } from '../../directory/validation.js';
import { epochSeconds } from '../../clock.js';
import { hashPassword } from '../../crypto/password.js';
import { parseFields } from '../../http/form.js';
import { hasSecondFactor, secondFactorsOf } from '../../mfa/policy.js';
import { createEnrolmentLink } from '../../mfa/enrolment_link.js';
import { sendSecurityNoticesLater } from '../../mail/security_notice_sender.js';
import { linkedIdentities, removableConnectors, removedIdentities } from '../../connectors/linked_identities.js';
import { notifyBackchannelLogoutLater } from '../../oauth/backchannel_logout.js';
import type { SessionRecord, UserRecord } from '../../store/store.js';
import {
  adminAudit,
  adminForm,
  adminGate,
  checked,
  doneRedirect,
  hereOf,
  noticeOf,
  notFound,
  pathSegment,
  renderAdmin,
  storedKey,
  when,
  type Admin,
  type Notice,
} from '../../console/console_page.js';

const params = z.object({ id: storedKey(128).min(1) });
const pageQuery = z.object({ done: z.string().max(32).optional() });
const csrfField = z.string().max(256).optional();
const plainForm = z.object({ csrf_token: csrfField });
const passwordForm = z.object({ csrf_token: csrfField, new_password: z.string().max(4096).default('') });
const roleForm = z.object({ csrf_token: csrfField, role: storedKey(256).default('') });
const signInForm = z.object({ csrf_token: csrfField, sign_in: storedKey(256).default('') });
const connectorForm = z.object({ csrf_token: csrfField, connector: storedKey(64).default('') });

const notices: Record<string, string> = {
  created: 'The user was created.',
  disabled: 'The account was disabled: every sign-in of theirs has ended.',
  enabled: 'The account was enabled. They sign in again.',
  password: 'The new password was set, and every sign-in of theirs has ended.',
  role_granted: 'The role was granted.',
  role_revoked: 'The role was revoked.',
  role_not_held: 'They did not hold that role.',
  ended: 'That sign-in was ended.',
  ended_none: 'That sign-in had ended already.',
  ended_all: 'Every sign-in of theirs has ended, and their access tokens are refused.',
  factors_reset: 'Their second factors were removed. Their next sign-in needs only their password.',
  factors_none: 'They had no second factors.',
  unlinked: 'The upstream identity was unlinked: it can no longer sign in, and every sign-in of theirs has ended.',
  allowed: 'That upstream account may sign in again (its next sign-in may link it again by email).',
  allowed_none: 'Nothing was removed from them at that connector.',
};

export async function adminUserPageRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { store, clock } = services;
  const page = { config: { page: true } };
  const pathOf = (user: Pick<UserRecord, 'id'>) => `/admin/users/${encodeURIComponent(user.id)}`;
  const backToUsers = { href: '/admin/users', label: 'Back to the users' };

  async function showUser(request: FastifyRequest, reply: FastifyReply, admin: Admin, user: UserRecord, notice?: Notice, status = 200) {
    const now = epochSeconds(clock);
    const [sessions, families, clients, roles, factors, identities, removed] = await Promise.all([
      store.listSessions(user.id, now),
      store.listRefreshFamilies(user.id, now),
      store.listClients(),
      store.listRoles(),
      secondFactorsOf(store, user.id),
      linkedIdentities(store, user.id),
      removedIdentities(store, user.id),
    ]);
    const removable = await removableConnectors(store, services.config, user, identities);
    const clientName = new Map(clients.map((c) => [c.clientId, c.name || c.clientId]));
    const signIns = signInRows(sessions, families, admin.session.id, when).map((row) => ({
      ...row,
      label:
        row.kind === 'app'
          ? `${clientName.get(row.clientId) ?? row.clientId} (${row.clientId})`
          : row.current
            ? 'A browser (this one: your own session)'
            : 'A browser',
    }));
    return renderAdmin(
      request,
      reply,
      services,
      'user',
      'users',
      {
        title: `User ${user.username}`,
        user: {
          id: user.id,
          username: user.username,
          email: user.email,
          emailVerified: user.emailVerified,
          name: user.name ?? '',
          source: user.source,
          disabled: user.disabled,
          created: when(user.createdAt),
          groups: user.groups,
          roles: user.roles,
          hasPassword: user.passwordHash !== 'upstream',
        },
        self: user.id === admin.user.id,
        path: pathOf(user),
        grantable: roles.filter((r) => !user.roles.includes(r.name)).map((r) => r.name),
        factors,
        identities: identities.map((i) => ({
          connectorId: i.connectorId,
          name: i.connectorName,
          subject: i.subject,
          linked: when(i.linkedAt),
          lastUsed: when(i.lastSignInAt),
          onlyWayIn: !removable.has(i.connectorId),
        })),
        // One row per connector, as Allow again lets all of that connector's back (most recent first).
        removed: [...new Set(removed.map((r) => r.connectorId))].flatMap((connectorId) => {
          const of = removed.filter((r) => r.connectorId === connectorId);
          const [latest] = of;
          return latest === undefined ? [] : [{ connectorId, name: latest.connectorName, subjects: of.map((r) => r.subject), removed: when(latest.removedAt) }];
        }),
        signIns,
        notice,
      },
      status,
    );
  }

  /** The user the path names, or the 404 page. */
  async function userOf(request: FastifyRequest, reply: FastifyReply): Promise<{ ok: true; user: UserRecord } | { ok: false; reply: FastifyReply }> {
    const { id } = parseFields(params, request.params);
    const user = await store.findUserById(id);
    return user ? { ok: true, user } : { ok: false, reply: await notFound(request, reply, services, 'user', backToUsers) };
  }

  const tellClients = (request: FastifyRequest, sessions: SessionRecord[]) => notifyBackchannelLogoutLater(services, sessions, request);

  app.get('/admin/users/:id', page, async (request, reply) => {
    const gate = await adminGate(request, reply, services, hereOf(request, '/admin/users'));
    if (!gate.ok) return gate.reply;
    const found = await userOf(request, reply);
    if (!found.ok) return found.reply;
    const { done } = parseFields(pageQuery, request.query);
    return showUser(request, reply, gate.admin, found.user, noticeOf(done, notices));
  });

  /** A form on the user page: the acting admin, the form, and the user (or the reply that refused). */
  async function userForm<T extends { csrf_token?: string | undefined }>(request: FastifyRequest, reply: FastifyReply, schema: z.ZodType<T>) {
    // The path itself is checked once the person is known to be an administrator.
    const param = (request.params as Record<string, unknown>).id;
    const rawId = (typeof param === 'string' ? param : '').slice(0, 128);
    const gate = await adminForm(request, reply, services, schema, `/admin/users/${pathSegment(rawId)}`);
    if (!gate.ok) return gate;
    const found = await userOf(request, reply);
    if (!found.ok) return found;
    return { ok: true as const, admin: gate.admin, form: gate.form, user: found.user };
  }

  for (const disabled of [true, false]) {
    app.post(`/admin/users/:id/${disabled ? 'disable' : 'enable'}`, page, async (request, reply) => {
      const got = await userForm(request, reply, plainForm);
      if (!got.ok) return got.reply;
      const { admin, user } = got;
      if (disabled && user.id === admin.user.id) {
        return showUser(
          request,
          reply,
          admin,
          user,
          { kind: 'error', text: 'You cannot disable your own account here: another administrator can.', about: 'status' },
          400,
        );
      }
      const ended = disabled ? await store.listSessions(user.id, epochSeconds(clock)) : [];
      if (!(await store.setUserDisabled(user.username, disabled, epochSeconds(clock)))) return notFound(request, reply, services, 'user', backToUsers);
      tellClients(request, ended);
      adminAudit(request, admin, disabled ? 'user.disabled' : 'user.enabled', { userId: user.id, username: user.username });
      return doneRedirect(reply, pathOf(user), disabled ? 'disabled' : 'enabled');
    });
  }

  app.post('/admin/users/:id/password', page, async (request, reply) => {
    const got = await userForm(request, reply, passwordForm);
    if (!got.ok) return got.reply;
    const { admin, user, form } = got;
    if (user.id === admin.user.id) {
      return showUser(
        request,
        reply,
        admin,
        user,
        { kind: 'error', text: 'Change your own password on your account page (it asks for the current one).', about: 'password' },
        400,
      );
    }
    const valid = checked(() => validPassword(form.new_password), 'password');
    if (!valid.ok) return showUser(request, reply, admin, user, valid.notice, 400);
    const now = epochSeconds(clock);
    const ended = await store.listSessions(user.id, now);
    if (!(await store.setUserPassword(user.username, await hashPassword(valid.value), now))) return notFound(request, reply, services, 'user', backToUsers);
    tellClients(request, ended);
    adminAudit(request, admin, 'user.password_changed', { userId: user.id, source: 'admin' });
    sendSecurityNoticesLater(services, request, user, { kind: 'password_changed', how: 'changed' }, 'administrator');
    return doneRedirect(reply, pathOf(user), 'password');
  });

  app.post('/admin/users/:id/roles/grant', page, async (request, reply) => {
    const got = await userForm(request, reply, roleForm);
    if (!got.ok) return got.reply;
    const { admin, user, form } = got;
    if (form.role === '' || !(await store.findRole(form.role))) {
      return showUser(request, reply, admin, user, { kind: 'error', text: 'Choose one of the roles.', about: 'roles' }, 400);
    }
    if (!(await store.grantRole(user.id, form.role, epochSeconds(clock)))) {
      return showUser(request, reply, admin, user, { kind: 'error', text: 'That role could not be granted: it or the user is gone.', about: 'roles' }, 404);
    }
    adminAudit(request, admin, 'user.role_granted', { userId: user.id, role: form.role });
    return doneRedirect(reply, pathOf(user), 'role_granted');
  });

  app.post('/admin/users/:id/roles/revoke', page, async (request, reply) => {
    const got = await userForm(request, reply, roleForm);
    if (!got.ok) return got.reply;
    const { admin, user, form } = got;
    if (form.role === adminRole && user.id === admin.user.id) {
      return showUser(
        request,
        reply,
        admin,
        user,
        { kind: 'error', text: 'You cannot take away your own admin role: another administrator can.', about: 'roles' },
        400,
      );
    }
    if (form.role === '' || !(await store.revokeRole(user.id, form.role))) return doneRedirect(reply, pathOf(user), 'role_not_held');
    adminAudit(request, admin, 'user.role_revoked', { userId: user.id, role: form.role });
    return doneRedirect(reply, pathOf(user), 'role_revoked');
  });

  app.post('/admin/users/:id/sign-ins/end', page, async (request, reply) => {
    const got = await userForm(request, reply, signInForm);
    if (!got.ok) return got.reply;
    const { admin, user, form } = got;
    // Only a sign-in of this user: the id of someone else's changes nothing.
    const session = form.sign_in === '' ? undefined : await store.endSessionById(form.sign_in, user.id);
    const family = session || form.sign_in === '' ? undefined : await store.revokeRefreshFamilyOf(form.sign_in, user.id, epochSeconds(clock));
    if (session) {
      tellClients(request, [session]);
      adminAudit(request, admin, 'session.ended_by_admin', { userId: user.id, kind: 'browser', sessionId: session.id });
    }
    if (family) adminAudit(request, admin, 'session.ended_by_admin', { userId: user.id, kind: 'app', clientId: family.clientId, familyId: family.familyId });
    return doneRedirect(reply, pathOf(user), session || family ? 'ended' : 'ended_none');
  });

  app.post('/admin/users/:id/sign-ins/end-all', page, async (request, reply) => {
    const got = await userForm(request, reply, plainForm);
    if (!got.ok) return got.reply;
    const { admin, user } = got;
    const now = epochSeconds(clock);
    const ended = await store.listSessions(user.id, now);
    if (!(await store.revokeUserTokens(user.username, now))) return notFound(request, reply, services, 'user', backToUsers);
    tellClients(request, ended);
    adminAudit(request, admin, 'user.tokens_revoked', { userId: user.id, source: 'admin' });
    return doneRedirect(reply, pathOf(user), 'ended_all');
  });

  app.post('/admin/users/:id/identities/unlink', page, async (request, reply) => {
    const got = await userForm(request, reply, connectorForm);
    if (!got.ok) return got.reply;
    const { admin, user, form } = got;
    // Unlinking ends every sign-in of theirs: the console's own session too.
    if (user.id === admin.user.id) {
      return showUser(request, reply, admin, user, { kind: 'error', text: 'Remove your own linked sign-ins on your account page.', about: 'identities' }, 400);
    }
    const now = epochSeconds(clock);
    const ended = await store.listSessions(user.id, now);
    // Only this user's identities of that connector: another's are never touched. No guard: an
    // operator may take the last way in (to give a password after, or to keep them out).
    const removed = form.connector === '' ? [] : await store.unlinkIdentity(user.id, form.connector, now);
    if (removed === 'last_way_in' || removed.length === 0) {
      return showUser(request, reply, admin, user, { kind: 'error', text: 'They have no identity linked at that connector.', about: 'identities' }, 404);
    }
    tellClients(request, ended);
    adminAudit(request, admin, 'user.identity_unlinked', {
      userId: user.id,
      connectorId: form.connector,
      subjects: removed.map((i) => i.subject),
      source: 'admin',
    });
    return doneRedirect(reply, pathOf(user), 'unlinked');
  });

  app.post('/admin/users/:id/identities/allow', page, async (request, reply) => {
    const got = await userForm(request, reply, connectorForm);
    if (!got.ok) return got.reply;
    const { admin, user, form } = got;
    const allowed = form.connector === '' ? 0 : await store.allowRemovedIdentity(user.id, form.connector);
    if (allowed > 0) adminAudit(request, admin, 'user.identity_allowed_again', { userId: user.id, connectorId: form.connector });
    return doneRedirect(reply, pathOf(user), allowed > 0 ? 'allowed' : 'allowed_none');
  });

  app.post('/admin/users/:id/second-factors/reset', page, async (request, reply) => {
    const got = await userForm(request, reply, plainForm);
    if (!got.ok) return got.reply;
    const { admin, user } = got;
    // The console needs this very factor of theirs; their own factors are managed on /account/security.
    if (user.id === admin.user.id) {
      return showUser(
        request,
        reply,
        admin,
        user,
        { kind: 'error', text: 'You cannot remove your own second factors here: manage them on your account’s security page.', about: 'factors' },
        400,
      );
    }
    const removed = await store.resetSecondFactors(user.id);
    adminAudit(request, admin, 'user.second_factors_reset', { userId: user.id, hadFactors: removed });
    if (removed) sendSecurityNoticesLater(services, request, user, { kind: 'factors_reset' }, 'administrator');
    return doneRedirect(reply, pathOf(user), removed ? 'factors_reset' : 'factors_none');
  });

  // An enrolment link for a person without a factor (their first, where a password alone may not
  // add one: mfa/enrolment_link.ts). Shown once, on the answer to the form, never in an address.
  app.post('/admin/users/:id/second-factors/enrolment-link', page, async (request, reply) => {
    const got = await userForm(request, reply, plainForm);
    if (!got.ok) return got.reply;
    const { admin, user } = got;
    if (user.disabled)
      return showUser(request, reply, admin, user, { kind: 'error', text: 'The account is disabled: enable it first.', about: 'factors' }, 400);
    if (hasSecondFactor(await secondFactorsOf(store, user.id))) {
      return showUser(
        request,
        reply,
        admin,
        user,
        { kind: 'error', text: 'They have a second factor already: they add more on their security page, no link needed.', about: 'factors' },
        409,
      );
    }
    const made = await createEnrolmentLink(store, services.config.issuer, user, epochSeconds(clock));
    adminAudit(request, admin, 'second_factor.enrolment_link_created', { userId: user.id, expiresAt: made.expiresAt, replaced: made.replaced });
    return renderAdmin(request, reply, services, 'enrolment_link', 'users', {
      title: `Enrolment link for ${user.username}`,
      username: user.username,
      path: pathOf(user),
      link: made.link,
      until: when(made.expiresAt),
      replaced: made.replaced,
    });
  });
}
