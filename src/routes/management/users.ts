/**
 * /api/v1/users: the people, in the order `users list` prints them, a page at a time, each as
 * `users list --json` prints it (management/user_view.ts: one shape for both); and the changes the
 * `users *` commands make, with their rules: add, update, disable/enable, passwd, revoke-tokens,
 * mfa-reset, mfa-enroll, grant/revoke, unlink. Whatever ends a person's sign-ins ends them here too,
 * and tells the clients (OIDC Back-Channel Logout 1.0), as the console does.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { operatorEnteredUser } from '../../directory/local_users.js';
import { z } from 'zod';
import { epochSeconds } from '../../clock.js';
import { unlinkConnector } from '../../connectors/identity_unlinking.js';
import { hashPassword } from '../../crypto/password.js';
import { randomUuid } from '../../crypto/secrets.js';
import { generatedPassword } from '../../directory/generated_password.js';
import { userChangeTo } from '../../directory/profile_claims.js';
import { removePerson } from '../../directory/user_removal.js';
import { validEmail, validName, validPassword, validUsername } from '../../directory/validation.js';
import { sendSecurityNoticesLater } from '../../mail/security_notice_sender.js';
import { checkIfMatch, etagOf } from '../../management/etag.js';
import { defineOperation } from '../../management/operations.js';
import { listAnswerSchema, page } from '../../management/pagination.js';
import { notFound, Problem, problemSchema } from '../../management/problem.js';
import { withResourceLock } from '../../management/resource_lock.js';
import {
  checkedProfile,
  enrolmentLinkSchema,
  enrolmentLinksCancelledSchema,
  factorsResetSchema,
  FieldChecks,
  mfaEnrollmentSchema,
  unlinkedSchema,
  userCreateSchema,
  usernameParamsSchema,
  userPatchSchema,
  usersListQuerySchema,
  userWithPasswordSchema,
} from '../../management/user_resource.js';
import { isoSeconds, userViews, userViewSchema, type UserView } from '../../management/user_view.js';
import { cancelEnrolmentLinks, createEnrolmentLink, defaultEnrolmentLinkLifetime, maxEnrolmentLinkLifetime } from '../../mfa/enrolment_link.js';
import { hasSecondFactor, secondFactorsOf } from '../../mfa/policy.js';
import { notifyBackchannelLogoutLater } from '../../oauth/backchannel_logout.js';
import { DuplicateError, type UserRecord } from '../../store/store.js';

/**
 * The order of `users list` on the database (SQL `lower(username COLLATE "C")`: ASCII letters
 * folded, then code order), the username itself after it so the key is unique: a page cursor.
 */
function orderKey(username: string): string {
  return `${username.replace(/[A-Z]/g, (c) => c.toLowerCase())}\u0000${username}`;
}

const roleParamsSchema = usernameParamsSchema.extend({ role: z.string().min(1).max(64) });
const connectorParamsSchema = usernameParamsSchema.extend({ connector: z.string().min(1).max(256) });

const notFoundAnswer = { description: 'No such user', schema: problemSchema };
const staleAnswer = { description: 'The user changed since the ETag given', schema: problemSchema };

export async function managementUserRoutes(app: FastifyInstance): Promise<void> {
  const { store, clock, config } = app.services;
  const tag = 'users';

  async function current(username: string): Promise<{ user: UserRecord; view: UserView; etag: string }> {
    const user = await store.findUserByUsername(username);
    if (!user) throw notFound(`user "${username}"`);
    const [view] = await userViews(store, [user], await store.listIdentities(user.id));
    if (!view) throw notFound(`user "${username}"`);
    return { user, view, etag: etagOf(view) };
  }

  async function answer(username: string, status: number, extra: { password?: string } = {}) {
    const { view, etag } = await current(username);
    return { status, headers: { etag }, body: { ...view, ...extra } };
  }

  /**
   * A change to one person: alone for that person (usernames compare without regard to ASCII
   * case), refused with 412 when If-Match names another state.
   */
  function changing<T>(request: FastifyRequest, username: string, work: (user: UserRecord) => Promise<T>): Promise<T> {
    return withResourceLock(store, `user:${username.toLowerCase()}`, async () => {
      const { user, etag } = await current(username);
      checkIfMatch(request, etag);
      return work(user);
    });
  }

  /** The later of both clocks, as the admin commands record a revocation. */
  async function revocationNow(): Promise<number> {
    return Math.max(epochSeconds(clock), await store.databaseTime());
  }

  /** Runs `end` (which ends every sign-in of the person) and tells their sessions' clients. */
  async function endingSignIns(request: FastifyRequest, user: UserRecord, end: (now: number) => Promise<boolean>): Promise<void> {
    const now = await revocationNow();
    const sessions = await store.listSessions(user.id, now);
    if (!(await end(now))) throw notFound(`user "${user.username}"`);
    notifyBackchannelLogoutLater(app.services, sessions, request);
  }

  defineOperation(app, {
    method: 'GET',
    path: '/users',
    operationId: 'listUsers',
    summary: 'List people, in the order `latchkey users list` prints them; filters: role, disabled, source, q',
    tag,
    scope: 'read:users',
    query: usersListQuerySchema,
    responses: { 200: { description: 'A page of people', schema: listAnswerSchema(userViewSchema) } },
    async handler({ query }) {
      const q = query.q?.toLowerCase();
      const users = (await store.listUsers()).filter(
        (u) =>
          (query.role === undefined || u.roles.includes(query.role)) &&
          (query.disabled === undefined || u.disabled === (query.disabled === 'true')) &&
          (query.source === undefined || u.source === query.source) &&
          (q === undefined || u.username.toLowerCase().includes(q) || u.email.toLowerCase().includes(q)),
      );
      const result = page(users, (u) => orderKey(u.username), query);
      return { status: 200, body: { data: await userViews(store, result.data), next: result.next } };
    },
  });

  defineOperation(app, {
    method: 'POST',
    path: '/users',
    operationId: 'createUser',
    summary: 'Add a person, as `latchkey users add`; without a password the server makes one, answered once',
    tag,
    scope: 'write:users',
    body: userCreateSchema,
    etag: true,
    responses: {
      201: { description: 'The person, with password when the server made it', schema: userWithPasswordSchema },
      409: { description: 'A user with this username exists', schema: problemSchema },
    },
    async handler({ body, audit }) {
      const now = epochSeconds(clock);
      const checks = new FieldChecks();
      const username = checks.check('/username', () => validUsername(body.username));
      const email = checks.check('/email', () => validEmail(body.email));
      const name = checks.check('/name', () => validName(body.name));
      const profile = checkedProfile(checks, body.profile ?? {}, now);
      const made = body.password === undefined ? generatedPassword() : undefined;
      const password = made ?? body.password ?? '';
      checks.check('/password', () => validPassword(password));
      const roles = [...new Set(body.roles ?? [])];
      for (const [index, role] of roles.entries())
        if (!(await store.findRole(role))) checks.errors.push({ path: `/roles/${index}`, message: `no role "${role}"` });
      checks.done();
      if (username === undefined || email === undefined || profile === undefined) throw new Problem(400, 'invalid-input', 'The request body is not valid.');
      if (await store.findUserByUsername(username)) throw new Problem(409, 'exists', `A user "${username}" already exists.`);
      const id = randomUuid();
      try {
        await store.createUser(operatorEnteredUser({ id, username, email, name, passwordHash: await hashPassword(password), profile, now }));
      } catch (err) {
        if (err instanceof DuplicateError) throw new Problem(409, 'exists', `A user "${username}" already exists.`);
        throw err;
      }
      audit('user.created', { username });
      for (const role of roles) if (await store.grantRole(id, role, now)) audit('user.role_granted', { userId: id, username, role });
      const created = await answer(username, 201, made === undefined ? {} : { password: made });
      return { ...created, headers: { ...created.headers, location: `/api/v1/users/${encodeURIComponent(username)}` } };
    },
  });

  defineOperation(app, {
    method: 'GET',
    path: '/users/{username}',
    operationId: 'getUser',
    summary: 'Read a person',
    tag,
    scope: 'read:users',
    params: usernameParamsSchema,
    etag: true,
    responses: { 200: { description: 'The person', schema: userViewSchema }, 404: notFoundAnswer },
    async handler({ params }) {
      return answer(params.username, 200);
    },
  });

  defineOperation(app, {
    method: 'PATCH',
    path: '/users/{username}',
    operationId: 'updateUser',
    summary:
      'Change a person: email, name, profile (as `users update`), disabled (as `users disable`/`enable`), password (as `users passwd`: their sign-ins end)',
    tag,
    scope: 'write:users',
    params: usernameParamsSchema,
    body: userPatchSchema,
    etag: true,
    responses: { 200: { description: 'The person as changed', schema: userViewSchema }, 404: notFoundAnswer, 412: staleAnswer },
    async handler({ request, params, body, audit }) {
      return changing(request, params.username, async (user) => {
        const now = epochSeconds(clock);
        const checks = new FieldChecks();
        const email = body.email === undefined ? undefined : checks.check('/email', () => validEmail(body.email?.trim()));
        let name: string | null | undefined = body.name === null ? null : undefined;
        if (typeof body.name === 'string') {
          const given = body.name;
          const before = checks.errors.length;
          name = checks.check('/name', () => validName(given));
          if (name === undefined && checks.errors.length === before)
            checks.errors.push({ path: '/name', message: 'must not be empty (null removes the name)' });
        }
        const profile = body.profile === undefined ? user.profile : checkedProfile(checks, body.profile, now);
        if (body.password !== undefined) checks.check('/password', () => validPassword(body.password ?? ''));
        checks.done();
        // What `users update` changes: only what differs, and the claims named in the audit event.
        const { change, changedClaims } = userChangeTo(user, { email, name, profile });
        if (changedClaims.length > 0) {
          if (!(await store.updateUser(user.username, change, now))) throw notFound(`user "${user.username}"`);
          audit('user.updated', { username: user.username, claims: changedClaims });
          if (change.email !== undefined && change.email.toLowerCase() !== user.email.toLowerCase()) {
            const updated = await store.findUserById(user.id);
            if (updated) sendSecurityNoticesLater(app.services, request, updated, { kind: 'email_changed', previous: user.email }, 'administrator');
          }
        }
        if (body.disabled === true && !user.disabled) {
          // A disabled account keeps nothing: enabling it again brings no sign-in back.
          await endingSignIns(request, user, (at) => store.setUserDisabled(user.username, true, at));
          audit('user.disabled', { username: user.username });
        } else if (body.disabled === false && user.disabled) {
          if (!(await store.setUserDisabled(user.username, false, 0))) throw notFound(`user "${user.username}"`);
          audit('user.enabled', { username: user.username });
        }
        if (body.password !== undefined) {
          // Whoever knew the old password is signed out everywhere (RFC 6819 §5.2.2.3).
          const hash = await hashPassword(body.password);
          await endingSignIns(request, user, (at) => store.setUserPassword(user.username, hash, at));
          audit('user.password_changed', { username: user.username });
          sendSecurityNoticesLater(app.services, request, user, { kind: 'password_changed', how: 'changed' }, 'administrator');
        }
        return answer(user.username, 200);
      });
    },
  });

  defineOperation(app, {
    method: 'DELETE',
    path: '/users/{username}',
    operationId: 'deleteUser',
    summary: 'Remove a person: every sign-in of theirs ends, and their identities, factors and role grants go with them',
    tag,
    scope: 'write:users',
    params: usernameParamsSchema,
    etag: true,
    responses: {
      204: { description: 'Removed' },
      404: notFoundAnswer,
      409: { description: 'The caller is this person', schema: problemSchema },
      412: staleAnswer,
    },
    async handler({ request, params, caller, audit }) {
      return changing(request, params.username, async (user) => {
        // A person removing themselves would lose the very sign-in making the call; another administrator can.
        if (caller?.kind === 'person' && caller.userId === user.id)
          throw new Problem(409, 'self', 'You cannot remove your own account: another administrator can.');
        const removed = await removePerson(store, user.username, await revocationNow());
        if (!removed) throw notFound(`user "${user.username}"`);
        notifyBackchannelLogoutLater(app.services, removed.endedSessions, request);
        audit('user.removed', { username: user.username, userId: user.id });
        return { status: 204 };
      });
    },
  });

  defineOperation(app, {
    method: 'POST',
    path: '/users/{username}/revoke-tokens',
    operationId: 'revokeUserTokens',
    summary: 'End every sign-in of a person, as `latchkey users revoke-tokens`: sessions, refresh tokens, access tokens at userinfo and introspection',
    tag,
    scope: 'write:users',
    params: usernameParamsSchema,
    etag: true,
    responses: { 204: { description: 'Every sign-in ended' }, 404: notFoundAnswer, 412: staleAnswer },
    async handler({ request, params, audit }) {
      return changing(request, params.username, async (user) => {
        await endingSignIns(request, user, (at) => store.revokeUserTokens(user.username, at));
        audit('user.tokens_revoked', { username: user.username });
        return { status: 204 };
      });
    },
  });

  defineOperation(app, {
    method: 'POST',
    path: '/users/{username}/mfa-reset',
    operationId: 'resetUserSecondFactors',
    summary: 'Remove the second factors of a person, as `latchkey users mfa-reset` (they are told by mail)',
    tag,
    scope: 'write:users',
    params: usernameParamsSchema,
    etag: true,
    responses: { 200: { description: 'Whether they had any', schema: factorsResetSchema }, 404: notFoundAnswer, 412: staleAnswer },
    async handler({ request, params, audit }) {
      return changing(request, params.username, async (user) => {
        const removed = await store.resetSecondFactors(user.id);
        audit('user.second_factors_reset', { username: user.username, userId: user.id, hadFactors: removed });
        if (removed) sendSecurityNoticesLater(app.services, request, user, { kind: 'factors_reset' }, 'administrator');
        return { status: 200, body: { had_factors: removed } };
      });
    },
  });

  defineOperation(app, {
    method: 'POST',
    path: '/users/{username}/mfa-enrollment',
    operationId: 'createUserEnrolmentLink',
    summary: 'A one-time link for the first second factor of a person, as `latchkey users mfa-enroll`: answered once, stored as a digest',
    tag,
    scope: 'write:users',
    params: usernameParamsSchema,
    body: mfaEnrollmentSchema,
    etag: true,
    responses: {
      201: { description: 'The link, answered only now', schema: enrolmentLinkSchema },
      404: notFoundAnswer,
      409: { description: 'The account is disabled, or has a second factor already', schema: problemSchema },
      412: staleAnswer,
    },
    async handler({ request, params, body, audit }) {
      const lifetime = body?.expires_in ?? defaultEnrolmentLinkLifetime;
      if (lifetime < 60 || lifetime > maxEnrolmentLinkLifetime)
        throw new Problem(400, 'invalid-input', 'The request body is not valid: see errors.', [
          { path: '/expires_in', message: `must be at least 60 and at most ${maxEnrolmentLinkLifetime} seconds (7 days)` },
        ]);
      return changing(request, params.username, async (user) => {
        if (user.disabled) throw new Problem(409, 'disabled', `${user.username} is disabled: enable them first.`);
        if (hasSecondFactor(await secondFactorsOf(store, user.id)))
          throw new Problem(
            409,
            'has-second-factor',
            `${user.username} has a second factor already: they add more on /account/security, with no link (mfa-reset removes them all).`,
          );
        const made = await createEnrolmentLink(store, config.issuer, user, epochSeconds(clock), lifetime);
        audit('second_factor.enrolment_link_created', {
          username: user.username,
          userId: user.id,
          expiresAt: isoSeconds(made.expiresAt),
          replaced: made.replaced,
        });
        return { status: 201, body: { link: made.link, expires_at: isoSeconds(made.expiresAt), replaced: made.replaced } };
      });
    },
  });

  defineOperation(app, {
    method: 'DELETE',
    path: '/users/{username}/mfa-enrollment',
    operationId: 'cancelUserEnrolmentLinks',
    summary: 'Cancel the unused enrolment link of a person, as `latchkey users mfa-enroll --cancel`',
    tag,
    scope: 'write:users',
    params: usernameParamsSchema,
    etag: true,
    responses: { 200: { description: 'How many links were cancelled', schema: enrolmentLinksCancelledSchema }, 404: notFoundAnswer, 412: staleAnswer },
    async handler({ request, params, audit }) {
      return changing(request, params.username, async (user) => {
        const cancelled = await cancelEnrolmentLinks(store, user.id, epochSeconds(clock));
        audit('second_factor.enrolment_links_cancelled', { username: user.username, userId: user.id, cancelled });
        return { status: 200, body: { cancelled } };
      });
    },
  });

  defineOperation(app, {
    method: 'PUT',
    path: '/users/{username}/roles/{role}',
    operationId: 'grantUserRole',
    summary: 'Grant a role to a person by hand, as `latchkey users grant`',
    tag,
    scope: 'write:users',
    params: roleParamsSchema,
    etag: true,
    responses: {
      200: { description: 'The person', schema: userViewSchema },
      404: { description: 'No such user or role', schema: problemSchema },
      412: staleAnswer,
    },
    async handler({ request, params, audit }) {
      return changing(request, params.username, async (user) => {
        if (!(await store.findRole(params.role))) throw notFound(`role "${params.role}"`);
        if (!(await store.grantRole(user.id, params.role, epochSeconds(clock)))) throw notFound(`user "${user.username}" or role "${params.role}"`);
        audit('user.role_granted', { userId: user.id, username: user.username, role: params.role });
        return answer(user.username, 200);
      });
    },
  });

  defineOperation(app, {
    method: 'DELETE',
    path: '/users/{username}/roles/{role}',
    operationId: 'revokeUserRole',
    summary: 'Take back a role granted by hand, as `latchkey users revoke`',
    tag,
    scope: 'write:users',
    params: roleParamsSchema,
    etag: true,
    responses: {
      200: { description: 'The person', schema: userViewSchema },
      404: { description: 'No such user, or they do not hold the role', schema: problemSchema },
      412: staleAnswer,
    },
    async handler({ request, params, audit }) {
      return changing(request, params.username, async (user) => {
        if (!(await store.revokeRole(user.id, params.role))) throw new Problem(404, 'not-found', `${user.username} does not hold "${params.role}".`);
        audit('user.role_revoked', { userId: user.id, username: user.username, role: params.role });
        return answer(user.username, 200);
      });
    },
  });

  defineOperation(app, {
    method: 'DELETE',
    path: '/users/{username}/identities/{connector}',
    operationId: 'unlinkUserIdentities',
    summary:
      'Remove the identities at a connector linked to a person, as `latchkey users unlink`: that upstream account can no longer sign in here, and every sign-in of theirs ends',
    tag,
    scope: 'write:users',
    params: connectorParamsSchema,
    etag: true,
    responses: {
      200: { description: 'The identities removed', schema: unlinkedSchema },
      404: { description: 'No such user or connector, or no identity linked there', schema: problemSchema },
      412: staleAnswer,
    },
    async handler({ request, params, audit }) {
      return changing(request, params.username, async (user) => {
        const now = await revocationNow();
        const sessions = await store.listSessions(user.id, now);
        const outcome = await unlinkConnector(store, user, params.connector, now);
        if (!outcome.ok) throw new Problem(404, 'not-found', `${outcome.refusal}.`);
        const removed = outcome.removed;
        notifyBackchannelLogoutLater(app.services, sessions, request);
        audit('user.identity_unlinked', {
          username: user.username,
          userId: user.id,
          connectorId: params.connector,
          subjects: removed.map((i) => i.subject),
          source: 'api',
        });
        return {
          status: 200,
          body: {
            identities: removed.map((i) => ({ connector: i.connectorId, subject: i.subject })),
            can_sign_in: outcome.canSignIn,
          },
        };
      });
    },
  });
}
