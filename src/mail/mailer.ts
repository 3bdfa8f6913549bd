/**
 * Outgoing mail (password-reset and verification links) through the SMTP server named by
 * LATCHKEY_SMTP_URL, with nodemailer. Every step has a time limit, so a mail server that hangs
 * holds nothing up for long; a failure is reported as a MailError that says what failed (the
 * SMTP command, the server's reply code) and never the message, its link or the credentials.
 */
import { isIP } from 'node:net';
import nodemailer, { type Transporter } from 'nodemailer';
import type { Config } from '../config.js';
import type { MailAddress, SmtpSettings } from './smtp_settings.js';

export interface MailMessage {
  /** One address, as stored for the account: never parsed as a list. */
  to: string;
  subject: string;
  text: string;
  html?: string;
}

/** What routes send mail through; tests may give their own (any SMTP server works too). */
export interface Mailer {
  send(message: MailMessage): Promise<void>;
  /** Closes any connection it keeps. */
  close(): void;
}

/** A mail that could not be sent, with only what is safe to log. */
export class MailError extends Error {
  constructor(
    /** nodemailer's code (ECONNECTION, ETIMEDOUT, EAUTH, EENVELOPE, …) or ours. */
    readonly code: string,
    /** The SMTP server's reply code, when it answered with a refusal. */
    readonly responseCode: number | undefined,
    /** The SMTP command that failed (CONN, AUTH PLAIN, RCPT TO, DATA, …). */
    readonly command: string | undefined,
  ) {
    super(`mail not sent: ${code}${responseCode === undefined ? '' : ` ${responseCode}`}${command === undefined ? '' : ` at ${command}`}`);
    this.name = 'MailError';
  }

  /** The fields a log line may carry (not named `code`: the logger redacts that field, which is an authorization code elsewhere). */
  toLog(): { mailError: string; smtpReply?: number; smtpCommand?: string } {
    return {
      mailError: this.code,
      ...(this.responseCode === undefined ? {} : { smtpReply: this.responseCode }),
      ...(this.command === undefined ? {} : { smtpCommand: this.command }),
    };
  }
}

/** Milliseconds each step may take: connecting, the server's greeting, any silence on the socket, and the whole send. */
export const mailTimeouts = { connection: 10_000, greeting: 10_000, socket: 20_000, total: 30_000 } as const;

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
}

/** Turns whatever nodemailer threw into a MailError (its message may quote the server, so it is dropped). */
function toMailError(err: unknown): MailError {
  if (err instanceof MailError) return err;
  const e = (err ?? {}) as { code?: unknown; responseCode?: unknown; command?: unknown };
  return new MailError(
    typeof e.code === 'string' && /^[A-Z_]{1,32}$/.test(e.code) ? e.code : 'EMAIL',
    typeof e.responseCode === 'number' ? e.responseCode : undefined,
    typeof e.command === 'string' ? e.command.slice(0, 32) : undefined,
  );
}

export class SmtpMailer implements Mailer {
  private readonly transport: Transporter;

  constructor(
    smtp: SmtpSettings,
    private readonly from: MailAddress,
    /** The name the server greets with (EHLO): the issuer's host rather than this machine's. */
    heloName: string,
  ) {
    this.transport = nodemailer.createTransport({
      host: smtp.host,
      port: smtp.port,
      secure: smtp.secure,
      // smtp:// upgrades with STARTTLS when the server offers it; a password never crosses the
      // network in the clear, so with credentials to a host that is not this machine TLS is required.
      requireTLS: !smtp.secure && smtp.user !== undefined && !isLoopback(smtp.host),
      ...(smtp.user === undefined ? {} : { auth: { user: smtp.user, pass: smtp.password ?? '' } }),
      name: heloName,
      connectionTimeout: mailTimeouts.connection,
      greetingTimeout: mailTimeouts.greeting,
      socketTimeout: mailTimeouts.socket,
      dnsTimeout: mailTimeouts.connection,
      tls: { minVersion: 'TLSv1.2', servername: isIP(smtp.host) === 0 ? smtp.host : undefined },
      // nodemailer's own logger would print the conversation, the link included.
      logger: false,
      debug: false,
    });
  }

  async send(message: MailMessage): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new MailError('ETIMEDOUT', undefined, undefined)), mailTimeouts.total);
    });
    try {
      await Promise.race([
        this.transport.sendMail({
          from: { name: this.from.name ?? '', address: this.from.address },
          // An address object, never a string nodemailer would split at commas.
          to: { name: '', address: message.to },
          subject: message.subject,
          text: message.text,
          ...(message.html === undefined ? {} : { html: message.html }),
          // RFC 3834: an automatic message, so that out-of-office replies are not sent back.
          headers: { 'Auto-Submitted': 'auto-generated' },
          disableFileAccess: true,
          disableUrlAccess: true,
        }),
        deadline,
      ]);
    } catch (err) {
      throw toMailError(err);
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    this.transport.close();
  }
}

/** The server's mailer, or undefined when LATCHKEY_SMTP_URL is unset (no mail is ever sent). */
export function createMailer(config: Config): Mailer | undefined {
  if (config.smtp === undefined) return undefined;
  return new SmtpMailer(config.smtp, config.mailFrom, new URL(config.issuer).hostname.replace(/^\[(.*)\]$/, '$1'));
}
