/**
 * The first second factor of an account that holds the `admin` role is set up only with a
 * one-time enrolment link, made by an operator (`latchkey users mfa-enroll`) or by another
 * administrator in the console and handed to the person outside Latchkey. Otherwise a stolen
 * password would be enough to bind the thief's own authenticator app or passkey: from then on the
 * thief passes the second step, the console is theirs, and the owner is locked out. NIST SP
 * 800-63B §6.1.2.2 lets a single-factor account add a factor after a single-factor sign-in; for
 * the accounts that run the server that is not enough, so the link is the second proof. People
 * without the role keep setting up their first factor themselves (and are told of it by mail).
 *
 * A link is a 256-bit secret with a type prefix, bound to one account, stored only as its SHA-256
 * (in the one-time token table, as mailed links are), valid a day by default, spent once by one
 * conditional UPDATE; making a new one cancels the older ones.
 */
import { adminRole } from '../directory/roles.js';
import { randomSecret, secretPrefix, sha256 } from '../crypto/secrets.js';
import type { Store, UserRecord } from '../store/store.js';
import { hasSecondFactor, type SecondFactors } from './policy.js';

/** Where a link leads (its secret in `code`); the form there posts back to it. */
export const enrolmentPath = '/account/security/enrol';
export const defaultEnrolmentLinkLifetime = 86_400;
export const maxEnrolmentLinkLifetime = 7 * 86_400;

/** Whether this person's first factor needs an enrolment link: they hold `admin` and have no factor yet. */
export function firstFactorNeedsLink(user: Pick<UserRecord, 'roles'>, factors: SecondFactors): boolean {
  return user.roles.includes(adminRole) && !hasSecondFactor(factors);
}

/** A well-formed link secret: anything else is refused before the store is asked. */
export function isEnrolmentSecret(value: string): boolean {
  const prefix = secretPrefix.factorEnrolmentLink;
  return value.length === prefix.length + 43 && value.startsWith(prefix) && /^[A-Za-z0-9_-]{43}$/.test(value.slice(prefix.length));
}

/** The secret in what a person pasted: the whole link, or the code alone. */
export function enrolmentSecretIn(typed: string): string | undefined {
  const text = typed.trim();
  if (text.length > 2048) return undefined;
  if (isEnrolmentSecret(text)) return text;
  const found = /[?&]code=(lk_fe_[A-Za-z0-9_-]{43})(?:&|#|$)/.exec(text)?.[1];
  return found !== undefined && isEnrolmentSecret(found) ? found : undefined;
}

export interface EnrolmentLink {
  link: string;
  expiresAt: number;
  /** How many older, unused links this one cancelled. */
  replaced: number;
}

/** A new link for `user`, valid `lifetime` seconds from `now`; older unused ones stop working. */
export async function createEnrolmentLink(
  store: Store,
  issuer: string,
  user: UserRecord,
  now: number,
  lifetime = defaultEnrolmentLinkLifetime,
): Promise<EnrolmentLink> {
  const replaced = await store.cancelEmailTokens(user.id, 'factor_enrolment', now);
  const secret = randomSecret(secretPrefix.factorEnrolmentLink);
  const expiresAt = now + lifetime;
  await store.createEmailToken({
    tokenHash: sha256(secret),
    userId: user.id,
    purpose: 'factor_enrolment',
    email: user.email,
    createdAt: now,
    expiresAt,
    usedAt: undefined,
  });
  return { link: `${issuer}${enrolmentPath}?code=${secret}`, expiresAt, replaced };
}

/** Cancels every unused link of `user`; how many there were. */
export function cancelEnrolmentLinks(store: Store, userId: string, now: number): Promise<number> {
  return store.cancelEmailTokens(userId, 'factor_enrolment', now);
}

/**
 * Spends the link of `secret` for `userId`: true only for an unused, unexpired link made for that
 * very account. A link presented by another account is spent all the same (it was seen by someone
 * it was not meant for), and refused.
 */
export async function spendEnrolmentLink(store: Store, secret: string, userId: string, now: number): Promise<'spent' | 'unknown' | 'other_account'> {
  if (!isEnrolmentSecret(secret)) return 'unknown';
  const spent = await store.useEmailToken(sha256(secret), 'factor_enrolment', now);
  if (!spent) return 'unknown';
  return spent.userId === userId ? 'spent' : 'other_account';
}
