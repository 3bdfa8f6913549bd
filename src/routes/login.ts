/**
 * Sign-in and sign-out for people. A sign-in always issues a fresh session id (no fixation); an
 * unknown username costs the same password-hash time as a wrong password; the place to return to
 * after sign-in must be a path on this server (no open redirect). Guessing is throttled without
 * ever locking the account's owner out (limits/signin_throttle.ts, http/device_cookie.ts). A
 * password hash of an older kind is stored anew at the sign-in that proves it
 * (http/password_upgrade.ts).
 */
import { audit } from '../audit/audit_events.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { decoyPasswordHash, isLocalPasswordHash, verifyPassword } from '../crypto/password.js';
import { csrfToken, csrfTokenValid } from '../http/csrf.js';
import { parseFields } from '../http/form.js';
import { formExpiredPage, renderErrorPage, renderPage, safeReturnTo } from '../http/pages.js';
import { allowFormActionTo, allowOwnScripts } from '../http/security_headers.js';
import { relyingParty } from '../mfa/webauthn.js';
import { formActionSource } from '../oauth/redirect.js';
import { userForUpstream } from '../connectors/accounts.js';
import { ldapDecoyBind, ldapFindEntry, ldapSignIn } from '../connectors/ldap_directory.js';
import { buttonConnectors, connectorSecret, freshSignInAsked, loadConnectors } from '../connectors/runtime.js';
import { misconfiguredMessageWithReference, UpstreamError } from '../connectors/upstream_profile.js';
import type { UpstreamFailureKind } from '../connectors/upstream_cause.js';
import { pageLanguage } from '../i18n/page_language.js';
import { translator } from '../i18n/translate.js';
import type { UserRecord } from '../store/store.js';
import { epochSeconds } from '../clock.js';
import { currentSession } from '../http/session.js';
import { upgradeOutdatedPasswordHash } from '../http/password_upgrade.js';
import { startSignInAttempt, type SignInAttempt } from '../http/signin_attempt.js';
import { preparedUsername } from '../oauth/typed_username.js';
import { afterFirstFactor } from '../mfa/sign_in_steps.js';
import { maxReturnToLength, openSealedInteraction, sealedInteractionOf } from '../http/sealed_interaction.js';

const loginQuery = z.object({
  return_to: z.string().max(maxReturnToLength).optional(),
  /** 1 when a fresh sign-in is required although the person is signed in (prompt=login, max_age). */
  fresh: z.string().max(1).optional(),
});

const loginForm = z.object({
  username: z.string().max(256).default(''),
  password: z.string().max(1024).default(''),
  csrf_token: z.string().max(256).optional(),
  return_to: z.string().max(maxReturnToLength).optional(),
});

/** A text with parameters, put into the page's language here (renderPage translates the rest). */
const pageText = (request: FastifyRequest) => translator(pageLanguage(request)).t;

export async function loginRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { store } = services;
  const page = { config: { page: true } };
  // Made before the first unknown name is typed, so that even that answer costs no extra hash.
  await decoyPasswordHash();

  /**
   * When the sign-in continues an authorization request, the page names the application, and its
   * CSP lets the form's redirect chain end at the client (browsers check form-action on redirects).
   */
  async function authorizationContext(
    request: FastifyRequest,
    reply: FastifyReply,
    returnTo: string,
  ): Promise<{
    clientName: string | undefined;
    connectors: Awaited<ReturnType<typeof buttonConnectors>>;
    passkeySignIn: boolean;
    loginHint: string | undefined;
  }> {
    const interaction = openSealedInteraction(request, reply, services, sealedInteractionOf(returnTo));
    const connectors = await buttonConnectors(services, request.log, freshSignInAsked(interaction));
    // The password form may end at the client. A connector's button does not need its upstream
    // here: it ends on a page of ours that moves on (routes/connectors.ts).
    const client = interaction && formActionSource(interaction.request.redirectUri);
    allowFormActionTo(reply, client);
    const passkeySignIn = relyingParty(services.config) !== undefined;
    if (passkeySignIn) allowOwnScripts(reply);
    return {
      clientName: interaction && (await store.findClient(interaction.request.clientId))?.name,
      connectors,
      passkeySignIn,
      loginHint: interaction?.request.loginHint,
    };
  }

  app.get('/login', page, async (request, reply) => {
    const { return_to, fresh } = parseFields(loginQuery, request.query);
    const returnTo = safeReturnTo(return_to, '/activate', maxReturnToLength);
    const signedIn = await currentSession(request, services);
    if (signedIn && fresh !== '1') return reply.redirect(returnTo, 303);
    const context = await authorizationContext(request, reply, returnTo);
    return renderPage(request, reply, services, 'login', {
      title: 'Sign in',
      csrfToken: await csrfToken(request, reply, services, 'login'),
      returnTo,
      // OIDC login_hint pre-fills the name; whoever is signed in already is asked again as themselves.
      username: signedIn?.user.username ?? context.loginHint ?? '',
      ...context,
      error: undefined,
    });
  });

  /**
   * The password form: a local account with a password owns its name — a wrong password there is
   * wrong, and no directory is asked (else a directory entry of the same name would be a second
   * way in, and a way around this account's throttling). Any other name goes to each LDAP
   * directory in order; the first that knows the name answers for it (a directory that is down or
   * does not know it passes to the next). An unknown local name still costs a full Argon2id
   * verification against the decoy (made with the current parameters), so the answer's timing does
   * not tell which local accounts exist among those without a directory.
   * `username` is prepared (oauth/typed_username.ts): a spelling the directory would take for a
   * local account's name (`ａｌｉｃｅ`, ` ALICE`) is that name here too, and so owned by the account.
   * A wrong password at a directory counts against the entry it found as well as the typed name.
   */
  async function checkPassword(
    request: FastifyRequest,
    attempt: SignInAttempt,
    username: string,
    password: string,
  ): Promise<{ user: UserRecord | undefined; matches: boolean; connectorId?: string; unavailable?: UpstreamFailureKind }> {
    const found = await store.findUserByUsername(username);
    const hasPassword = found !== undefined && isLocalPasswordHash(found.passwordHash);
    const matches = await verifyPassword(password, hasPassword ? found.passwordHash : await decoyPasswordHash());
    if (found && hasPassword) return { user: found, matches };
    // A directory that could not answer, when none that could knew the name: the person is told
    // that, not "wrong password" — and whether it is passing or needs an administrator.
    let unavailableKind: UpstreamFailureKind | undefined;
    for (const connector of await loadConnectors(services, request.log)) {
      if (connector.type !== 'ldap') continue;
      const connectorId = connector.record.id;
      const unavailable = (detail: string, failure: UpstreamFailureKind) => {
        if (unavailableKind !== 'misconfigured') unavailableKind = failure;
        services.metrics.upstreamSignIns.inc({ connector: connectorId, outcome: failure });
        audit(request, 'upstream.signin_failure', { connectorId, reason: failure, detail: detail.slice(0, 500), reference: request.id });
      };
      let bindPassword: string;
      try {
        bindPassword = connectorSecret(services, connector.record) ?? '';
      } catch (err) {
        // A secret that cannot be opened (another server key): this directory is out of reach.
        unavailable(`the bind password cannot be opened with this server's secret key: ${(err as Error).message}`, 'misconfigured');
        continue;
      }
      const lookup = await ldapFindEntry(connector.config, bindPassword, username, services.config.upstreamTimeout);
      if (lookup.kind === 'unavailable') {
        unavailable(lookup.detail, lookup.failure);
        continue;
      }
      if (lookup.kind === 'no_such_user') {
        // The same work as a wrong password for an entry found: a name's existence does not show in the time taken.
        await ldapDecoyBind(connector.config, services.config.upstreamTimeout);
        continue;
      }
      const { entry } = lookup;
      // Whatever name found the entry, its password is guessed at under the entry's one back-off.
      const againstEntry = await attempt.alsoCountAgainst(`ldap:${connectorId}:${entry.subject}`);
      const outcome = await againstEntry(() => ldapSignIn(connector.config, bindPassword, entry, password, services.config.upstreamTimeout));
      if (outcome.kind === 'unavailable') {
        unavailable(outcome.detail, outcome.failure);
        continue;
      }
      if (outcome.kind === 'wrong_password') {
        services.metrics.upstreamSignIns.inc({ connector: connectorId, outcome: 'wrong_password' });
        return { user: undefined, matches: false, connectorId };
      }
      try {
        const { user, created, refused, groupRoles } = await userForUpstream(
          store,
          { connectorId, emailTrusted: true, linkByEmail: false },
          outcome.profile,
          epochSeconds(services.clock),
        );
        if (created) audit(request, 'upstream.user_created', { connectorId, userId: user.id });
        if (refused.length > 0) audit(request, 'upstream.attributes_refused', { connectorId, userId: user.id, attributes: refused });
        if (groupRoles.gained.length > 0) audit(request, 'upstream.group_roles_granted', { connectorId, userId: user.id, roles: groupRoles.gained });
        if (groupRoles.lost.length > 0) audit(request, 'upstream.group_roles_revoked', { connectorId, userId: user.id, roles: groupRoles.lost });
        services.metrics.upstreamSignIns.inc({ connector: connectorId, outcome: 'success' });
        return { user, matches: true, connectorId };
      } catch (err) {
        if (!(err instanceof UpstreamError)) throw err;
        services.metrics.upstreamSignIns.inc({ connector: connectorId, outcome: err.reason });
        audit(request, 'upstream.signin_failure', { connectorId, reason: err.reason });
        // A disabled account answers like a wrong password, as a local one does.
        return { user: undefined, matches: false, connectorId };
      }
    }
    return { user: found, matches: false, ...(unavailableKind === undefined ? {} : { unavailable: unavailableKind }) };
  }

  app.post('/login', page, async (request, reply) => {
    const form = parseFields(loginForm, request.body);
    const returnTo = safeReturnTo(form.return_to, '/activate', maxReturnToLength);
    if (!(await csrfTokenValid(request, services, 'login', form.csrf_token))) {
      return renderErrorPage(
        request,
        reply,
        services,
        { ...formExpiredPage, link: { href: `/login?return_to=${encodeURIComponent(returnTo)}`, label: 'Sign in' } },
        403,
      );
    }
    const again = async (error: string, status: number) =>
      renderPage(
        request,
        reply,
        services,
        'login',
        {
          title: 'Sign in',
          csrfToken: await csrfToken(request, reply, services, 'login'),
          returnTo,
          username: form.username,
          ...(await authorizationContext(request, reply, returnTo)),
          error,
        },
        status,
      );
    const username = preparedUsername(form.username);
    if (username === '' || form.password === '') return again('Enter your username and password.', 400);

    const attempt = await startSignInAttempt(request, services, username);
    const { who } = attempt;
    const { user, matches: passwordMatches, connectorId, unavailable } = await attempt.run(() => checkPassword(request, attempt, username, form.password));
    // A disabled account answers like a wrong password: otherwise the answer would confirm a guess.
    if (!user || !passwordMatches || user.disabled) {
      await attempt.finish(false);
      services.metrics.signInFailures.inc();
      if (unavailable !== undefined) {
        // No password was judged: a directory could not be asked. Saying "wrong password" would
        // send the person round again for nothing; a misconfiguration is the administrator's to
        // fix, and the reference finds the warn line that says why.
        audit(request, 'signin.failure', { ...who, reason: 'directory_unavailable' });
        return again(
          unavailable === 'misconfigured'
            ? pageText(request)(misconfiguredMessageWithReference, { reference: request.id })
            : 'The directory that checks this password could not be reached. Try again in a moment.',
          502,
        );
      }
      // Never the typed username: people type their password there. A keyed digest still lets
      // an operator see repeated attempts on one name.
      audit(
        request,
        'signin.failure',
        user
          ? { userId: user.id, reason: user.disabled && passwordMatches ? 'disabled' : 'password' }
          : // A directory that knows the name refused the password (or the user it maps to is disabled here).
            connectorId !== undefined
            ? { ...who, connectorId, reason: 'password' }
            : { ...who, reason: 'unknown_user' },
      );
      return again('Wrong username or password.', 401);
    }
    // A local password just proven: stored anew if its hash is of an older kind (a directory's is not ours).
    if (connectorId === undefined) await upgradeOutdatedPasswordHash(request, services, user, form.password);
    const next = await afterFirstFactor(request, reply, services, user, { amr: ['pwd'], returnTo });
    if (next.kind === 'ended') {
      // The password changed while this one was being checked: it is the old one.
      await attempt.finish(false);
      audit(request, 'signin.failure', { userId: user.id, reason: 'password_changed' });
      return again('Wrong username or password.', 401);
    }
    await attempt.finish(true);
    if (next.kind === 'second_factor') {
      audit(request, 'signin.first_step', { userId: user.id, ...(connectorId === undefined ? {} : { connectorId }) });
      return reply.redirect(next.location, 303);
    }
    attempt.rememberBrowser(reply);
    audit(request, 'signin.success', { userId: user.id, ...(connectorId === undefined ? {} : { connectorId }) });
    return reply.redirect(returnTo, 303);
  });

  // /logout: routes/logout.ts.

  app.get('/', page, async (_request, reply) => reply.redirect('/activate', 303));
}
