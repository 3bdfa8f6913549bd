/**
 * What follows a proven first factor (a password, an upstream identity provider): the session at
 * once, or — for a person with a second factor, unless LATCHKEY_MFA=off — the second step first,
 * whatever the client asked for (people with a factor use it at every sign-in, so prompt=login and
 * max_age ask for it again too). Where a client, or LATCHKEY_MFA=required, asks a second factor
 * of someone who has none, the authorization or device page sends the session on to set one up
 * (mfa/policy.ts).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { epochSeconds } from '../clock.js';
import { startSession, type SignedIn } from '../http/session.js';
import type { Services } from '../services.js';
import type { AuthMethod, UserRecord } from '../store/store.js';
import { pendingSignInLifetime, savePendingSignIn } from './pending_sign_in.js';
import { hasSecondFactor, secondFactorsOf } from './policy.js';
import { openSealedInteraction, sealedInteractionOf } from '../http/sealed_interaction.js';

export type FirstStepOutcome =
  /** Signed in: go on to where the sign-in was for. */
  | { kind: 'signed_in'; signedIn: SignedIn }
  /** The second step comes first: go there. */
  | { kind: 'second_factor'; location: string }
  /** The person's sign-ins were ended (a new password) while this one was under way. */
  | { kind: 'ended' };

export function secondStepPath(returnTo: string): string {
  return `/login/second-factor?return_to=${encodeURIComponent(returnTo)}`;
}

export async function afterFirstFactor(
  request: FastifyRequest,
  reply: FastifyReply,
  services: Services,
  user: UserRecord,
  how: { amr: AuthMethod[]; returnTo: string; signedInAt?: number | undefined },
): Promise<FirstStepOutcome> {
  if (services.config.mfa !== 'off' && hasSecondFactor(await secondFactorsOf(services.store, user.id))) {
    savePendingSignIn(request, reply, services, {
      userId: user.id,
      amr: how.amr,
      ...(how.signedInAt === undefined ? {} : { signedInAt: how.signedInAt }),
      tokensRevokedAt: user.tokensRevokedAt ?? null,
      expiresAt: epochSeconds(services.clock) + pendingSignInLifetime,
    });
    return { kind: 'second_factor', location: secondStepPath(how.returnTo) };
  }
  return finishSignIn(request, reply, services, user, { amr: how.amr, returnTo: how.returnTo, signedInAt: how.signedInAt });
}

/**
 * The session, made for the authorization request in `returnTo` if there is one (what its
 * prompt=login asks for). A session of the same person this replaces keeps its first sign-in time
 * when `signedInAt` says so (a step-up).
 */
export async function finishSignIn(
  request: FastifyRequest,
  reply: FastifyReply,
  services: Services,
  user: UserRecord,
  how: {
    amr: AuthMethod[];
    returnTo: string;
    signedInAt?: number | undefined;
    /** A step-up: the raised session's authorization request and end stay its own. */
    keep?: { interactionId: string | undefined; expiresAt: number; id: string };
  },
): Promise<FirstStepOutcome> {
  const interactionId = how.keep ? how.keep.interactionId : openSealedInteraction(request, reply, services, sealedInteractionOf(how.returnTo))?.id;
  const signedIn = await startSession(request, reply, services, user, {
    amr: how.amr,
    interactionId,
    signedInAt: how.signedInAt,
    expiresAt: how.keep?.expiresAt,
    id: how.keep?.id,
  });
  return signedIn ? { kind: 'signed_in', signedIn } : { kind: 'ended' };
}
