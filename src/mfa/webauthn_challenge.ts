/**
 * The WebAuthn challenge a browser was given, kept in a sealed cookie until its answer comes back
 * (two minutes, as long as the browser's own prompt), for one purpose and — outside the
 * username-less sign-in — one user; taken (cleared) by the first answer, right or wrong.
 * Nothing is stored: the options endpoint of the sign-in page is anonymous.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { epochSeconds } from '../clock.js';
import { clearSealedCookie, readSealedCookie, saveSealedCookie } from '../http/sealed_cookie.js';
import type { Services } from '../services.js';

export type CeremonyPurpose = 'signin' | 'second_factor' | 'register';

const cookie = 'latchkey_webauthn';
const lifetime = 150;

const challengeSchema = z.object({
  purpose: z.enum(['signin', 'second_factor', 'register']),
  challenge: z.string().min(16).max(256),
  userId: z.string().max(64).optional(),
  expiresAt: z.number().int(),
});

export function saveChallenge(reply: FastifyReply, services: Services, purpose: CeremonyPurpose, challenge: string, userId?: string): void {
  saveSealedCookie(
    reply,
    services.config,
    services.secretBox,
    cookie,
    { purpose, challenge, ...(userId === undefined ? {} : { userId }), expiresAt: epochSeconds(services.clock) + lifetime },
    lifetime,
  );
}

/** The challenge for this purpose and user, if this browser holds a live one; it is used up either way. */
export function takeChallenge(request: FastifyRequest, reply: FastifyReply, services: Services, purpose: CeremonyPurpose, userId?: string): string | undefined {
  const saved = readSealedCookie(request, services.config, services.secretBox, cookie, challengeSchema);
  clearSealedCookie(reply, services.config, cookie);
  if (!saved || saved.purpose !== purpose || saved.userId !== userId || epochSeconds(services.clock) >= saved.expiresAt) return undefined;
  return saved.challenge;
}
