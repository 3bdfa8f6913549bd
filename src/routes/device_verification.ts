/**
 * The verification pages of the Device Code flow (RFC 8628 §3.3): enter the code (or arrive with
 * it pre-filled from verification_uri_complete), sign in if needed, then confirm or deny on a page
 * that shows the application, the access asked for in plain words, and where and when the request
 * came from (RFC 8628 §5.4). Arriving with a code never approves anything by itself.
 * Wrong codes are counted per source address (RFC 8628 §5.1); past the limit the answer is 429.
 */
import { audit } from '../audit/audit_events.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { epochSeconds } from '../clock.js';
import { tooManyRequests } from '../errors.js';
import { audienceName } from '../oauth/audience.js';
import { describeScopes } from '../oauth/scope.js';
import { pageLanguage } from '../i18n/page_language.js';
import { translator } from '../i18n/translate.js';
import { nothingPermitted, permittedScope } from '../oauth/permissions.js';
import { rateLimitKey } from '../limits/rate_limit.js';
import { formatUserCode, normalizeUserCode, userCodeDigest, userCodeProblem } from '../oauth/user_code.js';
import { csrfToken, csrfTokenValid } from '../http/csrf.js';
import { deviceName } from '../http/device_description.js';
import { parseFields } from '../http/form.js';
import { formExpiredPage, renderErrorPage, renderPage } from '../http/pages.js';
import { currentSession, type SignedIn } from '../http/session.js';
import { asksForMfa } from '../mfa/amr.js';
import { secondFactorNeed, stepUpPath } from '../mfa/policy.js';
import type { DeviceGrantRecord } from '../store/store.js';

const activateQuery = z.object({ user_code: z.string().max(256).optional() });
const activateForm = z.object({ user_code: z.string().max(256).default(''), csrf_token: z.string().max(256).optional() });
const confirmQuery = z.object({ user_code: z.string().max(256).default('') });
const decisionForm = z.object({
  user_code: z.string().max(256).default(''),
  decision: z.string().max(16).optional(),
  csrf_token: z.string().max(256).optional(),
});

type Lookup = { grant: DeviceGrantRecord; userCode: string } | { error: string };

/** What the page says; each case of a code that cannot be one says what is wrong with it. */
const messages = {
  empty: 'Enter the code shown on your device. Codes have 8 letters, like BCDF-GHJK.',
  not_letters: 'Codes have letters only, without digits, accents or other signs. Check the code on your device: it looks like BCDF-GHJK.',
  letters_never_used: 'Codes never contain the letters A, E, I, O, U or Y. Check each letter against the code on your device.',
  too_short: 'That code is too short. Codes have 8 letters, like BCDF-GHJK.',
  too_long: 'That code is too long. Codes have 8 letters, like BCDF-GHJK.',
  unknown: 'That code isn’t right. Check the code on your device and try again.',
  finished: 'That code has expired or has already been used. Start again on your device to get a new code.',
};

function describeAgo(seconds: number): string {
  if (seconds < 60) return 'just now';
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} minute${minutes === 1 ? '' : 's'} ago`;
  const hours = Math.floor(minutes / 60);
  return `${hours} hour${hours === 1 ? '' : 's'} ago`;
}

export async function deviceVerificationRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { config, store, clock, rateLimits } = services;
  const page = { config: { page: true } };

  /**
   * Finds the pending grant for a typed code, counting wrong codes against the address. Every try
   * is counted before the lookup, in one atomic step with the decision (so parallel guesses cannot
   * all pass a check made before any was counted), and a right code takes its count back.
   */
  async function lookUp(request: FastifyRequest, typed: string): Promise<Lookup> {
    const key = rateLimitKey(request.ip);
    const counted = await rateLimits.userCodeEntry.hit(key);
    if (counted.limited) throw tooManyRequests(counted.retryAfter, 'Too many wrong codes. Wait a few minutes and try again.');
    const canonical = normalizeUserCode(typed);
    const grant = canonical === undefined ? undefined : await store.findDeviceGrantByUserCode(userCodeDigest(services.userCodeKey, canonical));
    if (!canonical || !grant) {
      const problem = canonical ? undefined : (userCodeProblem(typed) ?? 'too_long');
      audit(request, 'device.user_code_rejected', { reason: problem === undefined ? 'unknown' : 'malformed', ...(problem ? { problem } : {}) });
      return { error: problem === undefined ? messages.unknown : messages[problem] };
    }
    await rateLimits.userCodeEntry.undo(key);
    if (grant.status !== 'pending' || grant.expiresAt <= epochSeconds(clock)) return { error: messages.finished };
    return { grant, userCode: formatUserCode(canonical) };
  }

  function secondFactorDone(signedIn: SignedIn, grant: DeviceGrantRecord): Promise<boolean> {
    return secondFactorNeed(config, store, signedIn.session, asksForMfa(grant.acrValues)).then((need) => need === 'satisfied');
  }

  async function showEntry(request: FastifyRequest, reply: FastifyReply, userCode: string, error: string | undefined, status = 200) {
    return renderPage(
      request,
      reply,
      services,
      'activate',
      { title: 'Connect a device', csrfToken: await csrfToken(request, reply, services, 'activate'), userCode, error },
      status,
    );
  }

  app.get('/activate', page, async (request, reply) => {
    const { user_code } = parseFields(activateQuery, request.query);
    const canonical = user_code === undefined ? undefined : normalizeUserCode(user_code);
    // Pre-fill only: the person still presses Continue, then Allow or Deny.
    const prefill = canonical ? formatUserCode(canonical) : (user_code ?? '').slice(0, 32);
    return showEntry(request, reply, prefill, undefined);
  });

  app.post('/activate', page, async (request, reply) => {
    const form = parseFields(activateForm, request.body);
    if (!(await csrfTokenValid(request, services, 'activate', form.csrf_token))) {
      return renderErrorPage(request, reply, services, { ...formExpiredPage, link: { href: '/activate', label: 'Enter your code' } }, 403);
    }
    const found = await lookUp(request, form.user_code);
    if ('error' in found) return showEntry(request, reply, form.user_code.slice(0, 32), found.error, 400);
    return reply.redirect(`/activate/confirm?user_code=${found.userCode}`, 303);
  });

  app.get('/activate/confirm', page, async (request, reply) => {
    const { user_code } = parseFields(confirmQuery, request.query);
    const signedIn = await currentSession(request, services);
    if (!signedIn) {
      const back = `/activate/confirm?user_code=${encodeURIComponent(user_code.slice(0, 32))}`;
      return reply.redirect(`/login?return_to=${encodeURIComponent(back)}`, 303);
    }
    const found = await lookUp(request, user_code);
    if ('error' in found) return showEntry(request, reply, user_code.slice(0, 32), found.error, 400);
    const { grant, userCode } = found;
    // A device approval is what phishing goes after (RFC 8628 §5.4): the second factor first.
    if (!(await secondFactorDone(signedIn, grant))) return reply.redirect(stepUpPath(`/activate/confirm?user_code=${userCode}`), 303);
    const client = await store.findClient(grant.clientId);
    const now = epochSeconds(clock);
    const access = await permittedScope(store, signedIn.user, grant.audience, grant.scope);
    if (access === '')
      return renderErrorPage(
        request,
        reply,
        services,
        { heading: 'Nothing you can allow', message: `${nothingPermitted} Ask your administrator for the role it needs.` },
        403,
      );
    return renderPage(request, reply, services, 'device_confirm', {
      title: 'Confirm access',
      csrfToken: await csrfToken(request, reply, services, 'device_decision'),
      userCode,
      userCodeSpelled: userCode.replace('-', '').split('').join(' '),
      clientName: client?.name ?? grant.clientId,
      access: describeScopes(access, translator(pageLanguage(request)).t),
      audienceName: await audienceName(store, config, grant.audience),
      requesterIp: grant.requesterIp,
      requesterDevice: deviceName(grant.requesterUserAgent, translator(pageLanguage(request)).t),
      requestedAtIso: new Date(grant.createdAt * 1000).toISOString(),
      requestedAt: new Date(grant.createdAt * 1000).toISOString().replace('T', ' ').slice(0, 16) + ' UTC',
      requestedAgo: describeAgo(now - grant.createdAt),
    });
  });

  app.post('/activate/confirm', page, async (request, reply) => {
    const form = parseFields(decisionForm, request.body);
    const signedIn = await currentSession(request, services);
    if (!signedIn) {
      return renderErrorPage(
        request,
        reply,
        services,
        {
          heading: 'Please sign in again',
          message: 'Your sign-in ended before you answered. Nothing was approved.',
          link: { href: `/activate?user_code=${encodeURIComponent(form.user_code.slice(0, 32))}`, label: 'Start again' },
        },
        401,
      );
    }
    if (!(await csrfTokenValid(request, services, 'device_decision', form.csrf_token))) {
      return renderErrorPage(request, reply, services, { ...formExpiredPage, link: { href: '/activate', label: 'Enter your code' } }, 403);
    }
    if (form.decision !== 'allow' && form.decision !== 'deny') {
      return renderErrorPage(
        request,
        reply,
        services,
        { heading: 'Choose Allow or Deny', message: 'The answer was missing. Go back and choose Allow or Deny.' },
        400,
      );
    }
    const found = await lookUp(request, form.user_code);
    if ('error' in found) return showEntry(request, reply, form.user_code.slice(0, 32), found.error, 400);
    const { grant } = found;
    if (form.decision === 'allow' && !(await secondFactorDone(signedIn, grant))) {
      return renderErrorPage(
        request,
        reply,
        services,
        {
          heading: 'Confirm it’s you first',
          message: 'Approving this device needs your second factor. Nothing was approved.',
          link: { href: stepUpPath(`/activate/confirm?user_code=${found.userCode}`), label: 'Continue' },
        },
        403,
      );
    }
    const now = epochSeconds(clock);
    // Allowing what the roles do not permit at all would only make the device's poll fail: refuse it now.
    if (form.decision === 'allow' && (await permittedScope(store, signedIn.user, grant.audience, grant.scope)) === '') {
      await store.denyDeviceGrant(grant.id, now);
      return renderErrorPage(request, reply, services, { heading: 'Nothing you can allow', message: `${nothingPermitted} The device was told no.` }, 403);
    }
    const done =
      form.decision === 'allow'
        ? await store.approveDeviceGrant(grant.id, signedIn.user.id, signedIn.session.authTime, signedIn.session.amr, now)
        : await store.denyDeviceGrant(grant.id, now);
    if (!done) return showEntry(request, reply, found.userCode, messages.finished, 409);
    audit(request, form.decision === 'allow' ? 'device.approved' : 'device.denied', { clientId: grant.clientId, userId: signedIn.user.id });
    services.metrics.deviceAuthorizations.inc({ outcome: form.decision === 'allow' ? 'approved' : 'denied' });
    const client = await store.findClient(grant.clientId);
    return renderPage(request, reply, services, 'device_result', {
      title: form.decision === 'allow' ? 'Device connected' : 'Request denied',
      approved: form.decision === 'allow',
      clientName: client?.name ?? grant.clientId,
    });
  });
}
