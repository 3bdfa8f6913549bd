/**
 * Sending security notices (mail/security_notice.ts): from the server after the answer, so that a
 * notice never delays or fails the change it reports, and from the admin commands once the change
 * is made. With no LATCHKEY_SMTP_URL nothing is sent. A failure is logged by what failed (the SMTP
 * error), never with the address or the text.
 */
import type { FastifyRequest } from 'fastify';
import { epochSeconds } from '../clock.js';
import { deviceDescription } from '../http/device_description.js';
import { headerText } from '../http/header_text.js';
import type { Services } from '../services.js';
import type { UserRecord } from '../store/store.js';
import { afterTheAnswer } from './after_answer.js';
import { MailError, type Mailer, type MailMessage } from './mailer.js';
import { securityNoticeMails, type ChangeAuthor, type SecurityChange } from './security_notice.js';

export type NoticeOutcome = { to: string; sent: true } | { to: string; sent: false; error: MailError };

/** Sends each mail in turn; never throws (a failure is in the outcome). */
export async function deliverSecurityNotices(mailer: Mailer, mails: readonly MailMessage[]): Promise<NoticeOutcome[]> {
  const outcomes: NoticeOutcome[] = [];
  for (const mail of mails) {
    try {
      await mailer.send(mail);
      outcomes.push({ to: mail.to, sent: true });
    } catch (err) {
      outcomes.push({ to: mail.to, sent: false, error: err instanceof MailError ? err : new MailError('EMAIL', undefined, undefined) });
    }
  }
  return outcomes;
}

/** The person making a change in this request: their address and, in our words, their browser. */
export function requestAuthor(request: FastifyRequest): ChangeAuthor {
  return { kind: 'person', address: request.ip, device: deviceDescription(headerText(request.headers['user-agent'])) };
}

/**
 * Tells `user` (as stored after the change) of `change`, after the answer to `request`. `by` is the
 * person themselves unless an administrator made the change (the console).
 */
export function sendSecurityNoticesLater(
  services: Services,
  request: FastifyRequest,
  user: UserRecord,
  change: SecurityChange,
  by: 'person' | 'administrator' = 'person',
): void {
  const mailer = services.mailer;
  if (mailer === undefined) return;
  const author: ChangeAuthor = by === 'person' ? requestAuthor(request) : { kind: 'administrator' };
  const mails = securityNoticeMails(services.config.productName, services.config.issuer, user, change, { at: epochSeconds(services.clock), by: author });
  afterTheAnswer(services, request.log, 'security notice failed', async () => {
    for (const outcome of await deliverSecurityNotices(mailer, mails)) {
      if (outcome.sent) request.log.info({ userId: user.id, notice: change.kind }, 'security notice sent');
      else request.log.warn({ userId: user.id, notice: change.kind, ...outcome.error.toLog() }, 'security notice not sent');
    }
  });
}
