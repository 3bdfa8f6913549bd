/**
 * A sign-in between its first step (password, upstream) and its second (TOTP, recovery code,
 * passkey): who, how far, since when — in a sealed cookie for five minutes (http/sealed_cookie.ts),
 * so nothing is stored for a sign-in nobody finishes and the browser can neither read nor change
 * it. No session exists yet: a stolen password opens nothing on its own. A change of the person's
 * password (or revoke-tokens) in between ends it (`tokensRevokedAt` must still be what it was).
 * It is bound to the browser's CSRF cookie, like a sealed authorization request: copied into
 * another browser it is nothing.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Services } from '../services.js';
import type { AuthMethod } from '../store/store.js';
import { browserBinding } from '../http/csrf.js';
import { clearSealedCookie, readSealedCookie, saveSealedCookie } from '../http/sealed_cookie.js';

export const pendingSignInLifetime = 300;
const cookie = 'latchkey_second_step';

const authMethods = ['pwd', 'fed', 'otp', 'hwk', 'user'] as const satisfies readonly AuthMethod[];

const pendingSchema = z.object({
  userId: z.string().min(1).max(64),
  amr: z.array(z.enum(authMethods)).max(authMethods.length),
  /** An upstream's auth_time, when the first step was an upstream sign-in that said. */
  signedInAt: z.number().int().optional(),
  tokensRevokedAt: z.number().int().nullable(),
  expiresAt: z.number().int(),
  browser: z.string().max(128),
});

export type PendingSignIn = Omit<z.infer<typeof pendingSchema>, 'browser'>;

export function savePendingSignIn(request: FastifyRequest, reply: FastifyReply, services: Services, pending: PendingSignIn): void {
  const sealed = { ...pending, browser: browserBinding(request, reply, services.config) };
  saveSealedCookie(reply, services.config, services.secretBox, cookie, sealed, pendingSignInLifetime);
}

/** The pending sign-in of this browser, if there is one and it has not expired at `now`. */
export function readPendingSignIn(request: FastifyRequest, reply: FastifyReply, services: Services, now: number): PendingSignIn | undefined {
  const sealed = readSealedCookie(request, services.config, services.secretBox, cookie, pendingSchema);
  if (!sealed || now >= sealed.expiresAt || sealed.browser !== browserBinding(request, reply, services.config)) return undefined;
  const { browser: _browser, ...pending } = sealed;
  return pending;
}

export function clearPendingSignIn(reply: FastifyReply, services: Services): void {
  clearSealedCookie(reply, services.config, cookie);
}
