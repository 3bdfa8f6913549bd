/**
 * Security notices: the mails that tell a person that a second factor was added to or removed from
 * their account, that their recovery codes were replaced, that their password or their email
 * changed — what happened, when, from where, and what to do if it was not them. NIST SP 800-63B
 * §6.1.2 asks for such a notice, by a channel other than the one used for the change, whenever an
 * authenticator is bound, replaced or removed: someone who took an account with a stolen password
 * then cannot do it silently.
 *
 * A notice carries no secret and no link that acts by itself (only the addresses of the reset page
 * and of the account pages, which ask who you are), and no text the change's author chose beyond
 * an email address: the device is described in words of our own (http/device_description.ts).
 */
import type { UserRecord } from '../store/store.js';
import type { MailMessage } from './mailer.js';

export type SecurityChange =
  | { kind: 'factor_enrolled'; factor: 'totp' | 'passkey'; replaced?: boolean }
  | { kind: 'factor_removed'; factor: 'totp' | 'passkey' }
  /** An administrator removed every factor (`users mfa-reset`, the console). */
  | { kind: 'factors_reset' }
  | { kind: 'recovery_codes_replaced' }
  | { kind: 'password_changed'; how: 'changed' | 'reset_link' }
  /** `previous` is the address before the change; the user record holds the new one. */
  | { kind: 'email_changed'; previous: string };

/** Who made the change: the person's own request (address, and browser as far as known) or an administrator. */
export type ChangeAuthor = { kind: 'person'; address: string; device: string | undefined } | { kind: 'administrator' };

export interface ChangeOrigin {
  /** Epoch seconds. */
  at: number;
  by: ChangeAuthor;
}

/** Where the notices point a person: the server's own pages. */
interface Pages {
  forgot: string;
  security: string;
  account: string;
}

/** The date and minute, in UTC, as the pages show times. */
function when(epochSeconds: number): string {
  return `${new Date(epochSeconds * 1000).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

function whereFrom(by: ChangeAuthor): string {
  if (by.kind === 'administrator') return 'By: an administrator';
  return `From: ${by.address}${by.device === undefined ? '' : ` (${by.device})`}`;
}

interface Notice {
  subject: string;
  /** What happened, as one paragraph. */
  what: string;
  /** What to do if it was not them (or not asked for). */
  ifNotYou: string[];
}

function noticeFor(product: string, username: string, change: SecurityChange, by: ChangeAuthor, pages: Pages): Notice {
  const account = `your ${product} account "${username}"`;
  const secureIt = [
    `- choose a new password: ${pages.forgot}`,
    `- check your second factors, and remove any you do not know: ${pages.security}`,
    '- tell your administrator.',
  ];
  switch (change.kind) {
    case 'factor_enrolled':
      return {
        subject: `A second factor was added to your ${product} account`,
        what:
          change.factor === 'totp'
            ? `An authenticator app was set up as a second factor of ${account}${change.replaced ? ', in place of the one before' : ''}.`
            : `A passkey was added to ${account}.`,
        ifNotYou: [
          'If this was not you, someone who knows your password signed in as you, and can now pass your second step. Right away:',
          `- choose a new password: ${pages.forgot}`,
          '- ask your administrator to remove the second factors you did not add (they can, even if you can no longer sign in).',
        ],
      };
    case 'factor_removed':
      return {
        subject: `A second factor was removed from your ${product} account`,
        what: change.factor === 'totp' ? `The authenticator app was removed from ${account}.` : `A passkey was removed from ${account}.`,
        ifNotYou: ['If this was not you, someone signed in as you. Right away:', ...secureIt],
      };
    case 'factors_reset':
      return {
        subject: `The second factors of your ${product} account were removed`,
        what: `An administrator removed every second factor of ${account}: authenticator app, passkeys and recovery codes. Your next sign-in needs only your password; then set up a new second factor at ${pages.security}`,
        ifNotYou: [`If you did not ask for this, tell your administrator at once, and choose a new password: ${pages.forgot}`],
      };
    case 'recovery_codes_replaced':
      return {
        subject: `New recovery codes for your ${product} account`,
        what: `New recovery codes were made for ${account}. The old ones no longer work.`,
        ifNotYou: ['If this was not you, someone signed in as you. Right away:', ...secureIt],
      };
    case 'password_changed':
      if (by.kind === 'administrator') {
        return {
          subject: `The password of your ${product} account was changed`,
          what: `An administrator set a new password for ${account}. Every sign-in of yours has ended.`,
          ifNotYou: [`If you did not ask for this, tell your administrator. You can choose a password of your own: ${pages.forgot}`],
        };
      }
      return {
        subject: `The password of your ${product} account was changed`,
        what:
          change.how === 'reset_link'
            ? `The password of ${account} was changed with a password-reset link sent to this address.`
            : `The password of ${account} was changed on its account page.`,
        ifNotYou: ['If this was not you, someone took your account. Right away:', `- choose a new password: ${pages.forgot}`, '- tell your administrator.'],
      };
    case 'email_changed':
      return {
        subject: `The email address of your ${product} account was changed`,
        what: `The email address of ${account} was changed from ${change.previous} to the new address below. Password-reset links and these notices now go there.`,
        ifNotYou: [
          'If this was not you, someone signed in as you and changed it, so a password reset no longer reaches you.',
          'Tell your administrator at once: they can set your address back and end every sign-in of the account.',
          `Your account page: ${pages.account}`,
        ],
      };
  }
}

function body(greeting: string, paragraphs: string[][], product: string, issuer: string): string {
  return [greeting, '', ...paragraphs.flatMap((lines) => [...lines, '']), `This is an automatic security notice from ${product} (${issuer}).`, ''].join('\n');
}

/**
 * The mails one change sends: one to the account's address — and for a changed email, one to the
 * address before (the owner, should someone else have made the change) and one to the new one.
 */
export function securityNoticeMails(
  product: string,
  issuer: string,
  user: Pick<UserRecord, 'username' | 'email'>,
  change: SecurityChange,
  origin: ChangeOrigin,
): MailMessage[] {
  const pages: Pages = { forgot: `${issuer}/login/forgot`, security: `${issuer}/account/security`, account: `${issuer}/account` };
  const notice = noticeFor(product, user.username, change, origin.by, pages);
  const facts = [`When: ${when(origin.at)}`, whereFrom(origin.by)];
  if (change.kind !== 'email_changed') {
    return [{ to: user.email, subject: notice.subject, text: body(`Hello ${user.username},`, [[notice.what], facts, notice.ifNotYou], product, issuer) }];
  }
  return [
    {
      to: change.previous,
      subject: notice.subject,
      text: body(`Hello ${user.username},`, [[notice.what], [`New address: ${user.email}`, ...facts], notice.ifNotYou], product, issuer),
    },
    {
      to: user.email,
      subject: `This address is now the email of a ${product} account`,
      text: body(
        // Not the account's name: nobody has confirmed yet that this address is theirs.
        'Hello,',
        [
          [
            `This address (${user.email}) was set as the email address of the ${product} account "${user.username}". Password-reset links and security notices of that account now come here.`,
          ],
          facts,
          [
            'If you know nothing of this account, someone typed your address by mistake: ignore this email, and any link to confirm the address or to reset the password that follows it.',
          ],
        ],
        product,
        issuer,
      ),
    },
  ];
}
