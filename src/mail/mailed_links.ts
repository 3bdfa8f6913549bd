/**
 * The links mailed to people: "Forgot your password?" and email verification. A link is a
 * 256-bit secret with a type prefix, stored only as its SHA-256, valid 30 minutes, and goes to the
 * address stored for the account, never to the text typed. At most maxLinksPerHour unused links of
 * one kind go to an account in an hour. A failed mail is logged by what failed, never with the
 * link, the address or the credentials.
 */
import { epochSeconds } from '../clock.js';
import { isLocalPasswordHash } from '../crypto/password.js';
import { randomSecret, secretPrefix, sha256 } from '../crypto/secrets.js';
import { audit, type AuditSource } from '../audit/audit_events.js';
import type { Services } from '../services.js';
import type { EmailTokenPurpose, UserRecord } from '../store/store.js';
import { MailError, type MailMessage } from './mailer.js';

/** How long a link in a mail works (seconds). */
export const linkLifetime = 30 * 60;
/** Past this many unused links of one kind sent to an account in the last hour, no more are sent. */
export const maxLinksPerHour = 3;
/** At most this many accounts get a reset mail for one address typed. */
const maxAccountsPerAddress = 5;

/** The links mailed (enrolment links are handed over by administrators, never mailed). */
export type MailedLinkPurpose = Exclude<EmailTokenPurpose, 'factor_enrolment'>;

/** Type prefixes, as crypto/secrets.ts secretPrefix has for the other secrets: scanners recognise a leaked link. */
export const linkPrefix = { password_reset: secretPrefix.passwordResetLink, email_verification: secretPrefix.emailVerificationLink } as const satisfies Record<
  MailedLinkPurpose,
  string
>;

/** A well-formed link secret of the purpose: anything else is refused before the store is asked. */
export function isLinkSecret(purpose: MailedLinkPurpose, value: string): boolean {
  return (
    value.length === linkPrefix[purpose].length + 43 &&
    value.startsWith(linkPrefix[purpose]) &&
    /^[A-Za-z0-9_-]{43}$/.test(value.slice(linkPrefix[purpose].length))
  );
}

/** Only a local password can be reset: an account made by an upstream signs in there. */
export function hasLocalPassword(user: UserRecord): boolean {
  return isLocalPasswordHash(user.passwordHash);
}

/** A new link of the purpose for the account's current address, stored as its digest. */
async function issueLink(services: Services, user: UserRecord, purpose: MailedLinkPurpose, now: number): Promise<string> {
  const secret = randomSecret(linkPrefix[purpose]);
  await services.store.createEmailToken({
    tokenHash: sha256(secret),
    userId: user.id,
    purpose,
    email: user.email,
    createdAt: now,
    expiresAt: now + linkLifetime,
    usedAt: undefined,
  });
  const path = purpose === 'password_reset' ? '/login/reset' : '/account/verify-email';
  return `${services.config.issuer}${path}?token=${secret}`;
}

function greeting(user: UserRecord): string {
  return `Hello ${user.name ?? user.username},`;
}

export function passwordResetMail(productName: string, user: UserRecord, link: string): MailMessage {
  return {
    to: user.email,
    subject: `Reset your ${productName} password`,
    text: [
      greeting(user),
      '',
      `someone asked to reset the password of your ${productName} account "${user.username}". To choose a new password, open this link within 30 minutes:`,
      '',
      link,
      '',
      'The link works once. A new password signs you out everywhere: every browser, device and app signed in as you signs in again.',
      '',
      'If you did not ask for this, ignore this email: your password stays as it is.',
      '',
    ].join('\n'),
  };
}

export function verificationMail(productName: string, user: UserRecord, link: string): MailMessage {
  return {
    to: user.email,
    subject: `Confirm your email address for ${productName}`,
    text: [
      // Not the name the person chose: this goes to an address nobody has confirmed yet, and a
      // name could carry any text to any inbox under our name.
      'Hello,',
      '',
      `to confirm that ${user.email} is the address of your ${productName} account "${user.username}", open this link within 30 minutes:`,
      '',
      link,
      '',
      'If you did not ask for this, ignore this email.',
      '',
    ].join('\n'),
  };
}

/** Sends one mail; a failure is logged (what failed, never the link, the address or the credentials) and reported as false. */
async function deliver(services: Services, source: AuditSource, user: UserRecord, purpose: EmailTokenPurpose, message: MailMessage): Promise<boolean> {
  try {
    if (services.mailer === undefined) return false; // callers look first: this is not reached
    await services.mailer.send(message);
    return true;
  } catch (err) {
    const failure = err instanceof MailError ? err.toLog() : { mailError: 'EMAIL' };
    source.log.warn({ userId: user.id, purpose, ...failure }, 'mail not sent');
    return false;
  }
}

/** What happened to a request for a verification link. */
export type VerificationOutcome = 'sent' | 'limited' | 'failed' | 'unavailable' | 'verified_already';

/**
 * Sends `user` a link that verifies their current email, unless mail is off, the address is
 * verified already, or the account was sent maxLinksPerHour unused ones in the last hour. Waits
 * for the mail server (bounded by the mailer's time limits); never throws for a mail failure.
 */
export async function sendVerificationEmail(services: Services, user: UserRecord, source: AuditSource): Promise<VerificationOutcome> {
  if (services.mailer === undefined) return 'unavailable';
  if (user.emailVerified) return 'verified_already';
  const now = epochSeconds(services.clock);
  if ((await services.store.countEmailTokens(user.id, 'email_verification', now - 3600)) >= maxLinksPerHour) {
    audit(source, 'email_verification.requested', { userId: user.id, outcome: 'limited' });
    return 'limited';
  }
  const link = await issueLink(services, user, 'email_verification', now);
  const sent = await deliver(services, source, user, 'email_verification', verificationMail(services.config.productName, user, link));
  audit(source, 'email_verification.requested', { userId: user.id, outcome: sent ? 'sent' : 'mail_failed' });
  return sent ? 'sent' : 'failed';
}

/**
 * A reset link to each account (at most maxAccountsPerAddress) that uses `email`, has a local
 * password and was sent fewer than maxLinksPerHour unused ones in the last hour. Everything here
 * depends on whether an account uses the address, so it runs after the answer.
 */
export async function sendPasswordResetLinks(services: Services, source: AuditSource, email: string): Promise<void> {
  const { store, config } = services;
  const now = epochSeconds(services.clock);
  const users = (await store.findUsersByEmail(email)).slice(0, maxAccountsPerAddress);
  // Never the typed address in the log: it is what someone is probing for.
  if (users.length === 0) {
    audit(source, 'password_reset.requested', { outcome: 'no_account' });
    return;
  }
  for (const user of users) {
    if (user.disabled || !hasLocalPassword(user)) {
      audit(source, 'password_reset.requested', { userId: user.id, outcome: user.disabled ? 'disabled' : 'no_local_password' });
      continue;
    }
    if ((await store.countEmailTokens(user.id, 'password_reset', now - 3600)) >= maxLinksPerHour) {
      audit(source, 'password_reset.requested', { userId: user.id, outcome: 'limited' });
      continue;
    }
    const link = await issueLink(services, user, 'password_reset', now);
    const sent = await deliver(services, source, user, 'password_reset', passwordResetMail(config.productName, user, link));
    audit(source, 'password_reset.requested', { userId: user.id, outcome: sent ? 'sent' : 'mail_failed' });
  }
}
