/**
 * A real SMTP server on loopback for tests (the smtp-server package as the receiving end): it
 * takes every message, optionally only after AUTH with one user and password, parses it with
 * mailparser and keeps it, so a test can read what a person would find in their inbox.
 */
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  /** The SMTP envelope: MAIL FROM and RCPT TO. */
  envelopeFrom: string;
  envelopeTo: string[];
  /** The From and To headers, as text; the From's display name and address. */
  from: string;
  fromName: string;
  fromAddress: string;
  to: string;
  subject: string;
  text: string;
  headers: Map<string, unknown>;
  /** Who authenticated for it (undefined without AUTH). */
  authenticatedAs: string | undefined;
}

export interface TestSmtpServer {
  port: number;
  /** smtp://[user:password@]127.0.0.1:port, for LATCHKEY_SMTP_URL. */
  url: string;
  mails: ReceivedMail[];
  /** Failed AUTH attempts seen. */
  authFailures: number;
  close(): Promise<void>;
}

export async function startSmtpServer(credentials?: { user: string; password: string }): Promise<TestSmtpServer> {
  const mails: ReceivedMail[] = [];
  const state = { authFailures: 0 };
  const server = new SMTPServer({
    // Plain text on loopback: no certificate to make. AUTH only when the test asks for credentials.
    disabledCommands: credentials ? ['STARTTLS'] : ['STARTTLS', 'AUTH'],
    authOptional: credentials === undefined,
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, callback) {
      if (credentials && auth.username === credentials.user && auth.password === credentials.password) {
        callback(null, { user: auth.username });
        return;
      }
      state.authFailures++;
      callback(new Error('Invalid username or password'));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        simpleParser(Buffer.concat(chunks))
          .then((parsed) => {
            mails.push({
              envelopeFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
              envelopeTo: session.envelope.rcptTo.map((r) => r.address),
              from: parsed.from?.text ?? '',
              fromName: parsed.from?.value[0]?.name ?? '',
              fromAddress: parsed.from?.value[0]?.address ?? '',
              to: Array.isArray(parsed.to) ? parsed.to.map((a) => a.text).join(', ') : (parsed.to?.text ?? ''),
              subject: parsed.subject ?? '',
              text: parsed.text ?? '',
              headers: parsed.headers,
              authenticatedAs: typeof session.user === 'string' ? session.user : undefined,
            });
            callback();
          })
          .catch((err: unknown) => callback(err instanceof Error ? err : new Error(String(err))));
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  const auth = credentials ? `${encodeURIComponent(credentials.user)}:${encodeURIComponent(credentials.password)}@` : '';
  return {
    port,
    url: `smtp://${auth}127.0.0.1:${port}`,
    mails,
    get authFailures() {
      return state.authFailures;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The one link in a mail's text that starts with `prefix` (e.g. the issuer's /login/reset). */
export function linkIn(mail: ReceivedMail, prefix: string): string {
  const links = mail.text.match(/https?:\/\/\S+/g)?.filter((l) => l.startsWith(prefix)) ?? [];
  if (links.length !== 1) throw new Error(`expected one link starting with ${prefix} in:\n${mail.text}`);
  return links[0]!;
}
