/**
 * LATCHKEY_SMTP_URL and LATCHKEY_MAIL_FROM taken apart (config.ts validates with these, as it does
 * a postgres:// URL with store/database_url.ts). The SMTP password is kept out of anything that
 * prints or logs the config.
 */

/** LATCHKEY_SMTP_URL, taken apart: the mail server that sends password-reset and verification links. */
export interface SmtpSettings {
  /** smtps: TLS from the first byte (port 465 by default); smtp: STARTTLS when the server offers it (port 587 by default). */
  readonly secure: boolean;
  readonly host: string;
  readonly port: number;
  readonly user: string | undefined;
  /** Not enumerable: a config printed or logged whole never shows it. */
  readonly password: string | undefined;
}

/** The From of every mail: a display name and an address. */
export interface MailAddress {
  readonly name: string | undefined;
  readonly address: string;
}

// A plain addr-spec without spaces, angle brackets or quotes; what mail servers accept everywhere.
const mailAddressPattern = /^[^\s<>@"(),;:\\[\]]+@[A-Za-z0-9.-]+$|^[^\s<>@"(),;:\\[\]]+@\[[0-9A-Fa-f:.]+\]$/;

/** "Name <addr@host>" or "addr@host"; undefined when it is neither. */
export function parseMailAddress(value: string): MailAddress | undefined {
  const text = value.trim();
  if (text.length > 320 || /[\u0000-\u001f\u007f]/.test(text)) return undefined;
  const named = /^(.*?)\s*<([^<>]*)>$/.exec(text);
  const name = named
    ? (named[1] ?? '')
        .trim()
        .replace(/^"(.*)"$/, '$1')
        .trim()
    : undefined;
  const address = named ? (named[2] ?? '').trim() : text;
  if (!mailAddressPattern.test(address) || address.length > 254) return undefined;
  if (name !== undefined && /[<>"]/.test(name)) return undefined;
  return { name: name === '' ? undefined : name, address };
}

/** LATCHKEY_SMTP_URL: smtp:// or smtps://, optional user:password, host, optional port; nothing else. */
export function parseSmtpUrl(value: string): SmtpSettings | undefined {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    return undefined;
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') return undefined;
  if (url.hostname === '' || url.port === '0' || (url.pathname !== '' && url.pathname !== '/') || url.search !== '' || url.hash !== '') return undefined;
  let user: string | undefined;
  let password: string | undefined;
  try {
    user = url.username === '' ? undefined : decodeURIComponent(url.username);
    password = url.password === '' ? undefined : decodeURIComponent(url.password);
  } catch {
    return undefined;
  }
  if (password !== undefined && user === undefined) return undefined;
  const secure = url.protocol === 'smtps:';
  const settings = {
    secure,
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? (secure ? 465 : 587) : Number(url.port),
    user,
  };
  Object.defineProperty(settings, 'password', { value: password, enumerable: false });
  return Object.freeze(settings as SmtpSettings);
}
