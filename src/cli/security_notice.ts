/**
 * Security notices (mail/security_notice.ts) for the changes an operator makes from the command
 * line — a new password, removed second factors, a new email — sent once the change is made when
 * LATCHKEY_SMTP_URL is set. The change stands whatever the mail server does: a failure is one line
 * on stderr (what failed, never the text).
 */
import { epochSeconds, systemClock } from '../clock.js';
import { createMailer } from '../mail/mailer.js';
import { securityNoticeMails, type SecurityChange } from '../mail/security_notice.js';
import { deliverSecurityNotices } from '../mail/security_notice_sender.js';
import type { UserRecord } from '../store/store.js';
import type { CommandContext } from './command.js';
import { serverIssuer } from '../server_issuer.js';

export async function mailSecurityNotice(context: CommandContext, user: UserRecord, change: SecurityChange): Promise<void> {
  const config = context.config();
  const mailer = createMailer(config);
  if (mailer === undefined) return;
  try {
    // The links in the mail are the server's: on the issuer it runs with, whatever this shell's environment says.
    const { issuer } = await serverIssuer(await context.store(), config);
    const mails = securityNoticeMails(config.productName, issuer, user, change, { at: epochSeconds(systemClock), by: { kind: 'administrator' } });
    for (const outcome of await deliverSecurityNotices(mailer, mails)) {
      context.stderr.write(
        outcome.sent
          ? `Sent a security notice to ${outcome.to}\n`
          : `The security notice to ${outcome.to} was not sent (${outcome.error.message}); the change is made\n`,
      );
    }
  } finally {
    mailer.close();
  }
}
