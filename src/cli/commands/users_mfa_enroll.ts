/**
 * `latchkey users mfa-enroll <username>`: a one-time link with which a person sets up their first
 * second factor — what an account holding the `admin` role needs, since a password alone cannot
 * add its first factor (mfa/enrolment_link.ts); on a fresh server, how the first administrator
 * gets into the console. Printed once on stdout, stored only as a digest; a new link cancels the
 * one before, and `--cancel` cancels it without making another. Audited.
 */
import { adminRole } from '../../directory/roles.js';
import { AdminInputError } from '../../directory/validation.js';
import { epochSeconds, systemClock } from '../../clock.js';
import { cancelEnrolmentLinks, createEnrolmentLink, defaultEnrolmentLinkLifetime, enrolmentPath, maxEnrolmentLinkLifetime } from '../../mfa/enrolment_link.js';
import { hasSecondFactor, secondFactorsOf } from '../../mfa/policy.js';
import { cliAudit } from '../audit_log.js';
import { CommandError, defineCommand } from '../command.js';
import { isoTime } from '../output.js';
import { issuerForAddresses } from '../server_address.js';
import { managementClient } from '../management_client.js';
import type { UserView } from '../../management/user_view.js';

export function validEnrolmentLinkLifetime(value: string | undefined): number {
  if (value === undefined) return defaultEnrolmentLinkLifetime;
  if (!/^\d{1,9}$/.test(value) || Number(value) < 60) throw new AdminInputError('--expires-in must be a whole number of seconds, at least 60');
  const seconds = Number(value);
  if (seconds > maxEnrolmentLinkLifetime) throw new AdminInputError(`--expires-in must be at most ${maxEnrolmentLinkLifetime} seconds (7 days)`);
  return seconds;
}

export const usersMfaEnrollCommand = defineCommand({
  usage: 'latchkey users mfa-enroll <username> [--expires-in <seconds>] [--cancel]',
  help: [
    'Options:',
    `  --expires-in <seconds>   how long the link works: default ${defaultEnrolmentLinkLifetime} (a day), at most ${maxEnrolmentLinkLifetime} (7 days)`,
    "  --cancel                 cancel the person's unused link, and make none",
    '',
    'Prints a link (stdout, once) with which the person, signed in with their password, sets up their',
    'first second factor: an authenticator app or a passkey. People holding the admin role need one;',
    'others set up their first factor themselves. The link works once, only for that account. Give it',
    'to them yourself, over a channel that reaches them and not whoever may have their password — not',
    'their email. A new link cancels the one before.',
    '',
  ].join('\n'),
  positionals: { min: 1, max: 1 },
  options: { 'expires-in': { type: 'string' }, cancel: { type: 'boolean' } },
  remote: true,
  async run(context) {
    const username = context.positionals[0] ?? '';
    const cancel = context.values.cancel === true;
    if (cancel && context.values['expires-in'] !== undefined) throw new AdminInputError('--cancel makes no link: it takes no --expires-in');
    const lifetime = validEnrolmentLinkLifetime(context.values['expires-in']);
    const cancelledSaid = (who: string, cancelled: number) =>
      context.stderr.write(cancelled > 0 ? `Cancelled the enrolment link of ${who}\n` : `${who} had no unused enrolment link\n`);
    const linkSaid = (user: { username: string; roles: readonly string[] }, made: { link: string; expiresAt: string; replaced: number }, issuer: string) => {
      context.stderr.write(
        [
          `One-time enrolment link for ${user.username} (their first second factor; works once, until ${made.expiresAt}, only while signed in as ${user.username}; shown only once):`,
          ...(made.replaced > 0 ? ['The link made before no longer works.'] : []),
          ...(user.roles.includes(adminRole) ? [] : [`${user.username} does not hold the admin role: they can also set up their first factor without it.`]),
          `Give it to them yourself, not by email. If ${issuer} is not the server's public address (LATCHKEY_ISSUER), they can paste the link on /account/security instead.`,
          '',
        ].join('\n'),
      );
      context.stdout.write(`${made.link}\n`);
    };
    const remote = managementClient(context);
    if (remote) {
      // The server checks the account (enabled, no factor yet) and makes the link on its own issuer.
      const path = `/users/${encodeURIComponent(username)}`;
      const user = await remote.call<UserView>('GET', path);
      if (cancel) {
        const { cancelled } = await remote.call<{ cancelled: number }>('DELETE', `${path}/mfa-enrollment`);
        cancelledSaid(user.username, cancelled);
        return 0;
      }
      const made = await remote.call<{ link: string; expires_at: string; replaced: number }>('POST', `${path}/mfa-enrollment`, { expires_in: lifetime });
      linkSaid(
        user,
        { link: made.link, expiresAt: made.expires_at, replaced: made.replaced },
        made.link.slice(0, Math.max(0, made.link.indexOf(enrolmentPath))),
      );
      return 0;
    }
    const store = await context.store();
    const user = await store.findUserByUsername(username);
    if (!user) throw new CommandError(`no user "${username}"`);
    const now = epochSeconds(systemClock);
    if (cancel) {
      const cancelled = await cancelEnrolmentLinks(store, user.id, now);
      await cliAudit(context, 'second_factor.enrolment_links_cancelled', { username: user.username, userId: user.id, cancelled });
      cancelledSaid(user.username, cancelled);
      return 0;
    }
    if (user.disabled) throw new CommandError(`${user.username} is disabled: users enable first`);
    if (hasSecondFactor(await secondFactorsOf(store, user.id))) {
      throw new CommandError(
        `${user.username} has a second factor already: they add more on /account/security, with no link (users mfa-reset removes them all)`,
      );
    }
    const issuer = await issuerForAddresses(context);
    const made = await createEnrolmentLink(store, issuer, user, now, lifetime);
    await cliAudit(context, 'second_factor.enrolment_link_created', {
      username: user.username,
      userId: user.id,
      expiresAt: isoTime(made.expiresAt),
      replaced: made.replaced,
    });
    linkSaid(user, { link: made.link, expiresAt: isoTime(made.expiresAt), replaced: made.replaced }, issuer);
    return 0;
  },
});
