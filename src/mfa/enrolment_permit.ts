/**
 * What a spent enrolment link (mfa/enrolment_link.ts) leaves behind: a permit, in a sealed cookie
 * for 15 minutes, to set up a first second factor — bound to the person, to the session that
 * spent the link (a new sign-in, such as a new password makes, ends it) and to the browser (copied
 * into another, it is nothing). Once a factor is set up the permit has nothing left to allow: a
 * person with a factor changes factors only from a session that used one.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { browserBinding } from '../http/csrf.js';
import { clearSealedCookie, readSealedCookie, saveSealedCookie } from '../http/sealed_cookie.js';
import type { SignedIn } from '../http/session.js';
import type { Services } from '../services.js';

export const enrolmentPermitLifetime = 15 * 60;
const cookie = 'latchkey_enrolment';

const permitSchema = z.object({
  userId: z.string().min(1).max(64),
  /** The session's public id (kept through a step-up or an enrolment, new at every sign-in). */
  sessionId: z.string().min(1).max(64),
  expiresAt: z.number().int(),
  browser: z.string().max(128),
});

export function grantEnrolmentPermit(request: FastifyRequest, reply: FastifyReply, services: Services, signedIn: SignedIn, now: number): void {
  const permit = {
    userId: signedIn.user.id,
    sessionId: signedIn.session.id,
    expiresAt: now + enrolmentPermitLifetime,
    browser: browserBinding(request, reply, services.config),
  };
  saveSealedCookie(reply, services.config, services.secretBox, cookie, permit, enrolmentPermitLifetime);
}

/** Whether this browser holds an unexpired permit for this very person and session. */
export function hasEnrolmentPermit(request: FastifyRequest, reply: FastifyReply, services: Services, signedIn: SignedIn, now: number): boolean {
  const permit = readSealedCookie(request, services.config, services.secretBox, cookie, permitSchema);
  return (
    permit !== undefined &&
    now < permit.expiresAt &&
    permit.userId === signedIn.user.id &&
    permit.sessionId === signedIn.session.id &&
    permit.browser === browserBinding(request, reply, services.config)
  );
}

export function clearEnrolmentPermit(reply: FastifyReply, services: Services): void {
  clearSealedCookie(reply, services.config, cookie);
}
