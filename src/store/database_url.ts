/**
 * LATCHKEY_DB is either a postgres:// (or postgresql://) URL or the path of a SQLite file. A URL may
 * carry a password, which must never reach a terminal or a log: these helpers print it as ***.
 */

export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value);
}

/** Whether the URL parses at all (a password with @ : / or % must be percent-encoded). */
export function isValidPostgresUrl(value: string): boolean {
  try {
    new URL(value);
    return true;
  } catch {
    return false;
  }
}

const hidden = '***';

/** The database as it may be shown: a SQLite path as is, a URL without its password. */
export function redactDatabase(value: string): string {
  if (!isPostgresUrl(value)) return value;
  try {
    const url = new URL(value);
    if (url.password !== '') url.password = hidden;
    // node-postgres also takes the password from a query parameter.
    if (url.searchParams.has('password')) url.searchParams.set('password', hidden);
    return url.toString();
  } catch {
    return `${value.slice(0, value.indexOf('://') + 3)}${hidden}`;
  }
}

/** `text` (an error message, say) with every appearance of the URL's password replaced. */
export function hidePassword(text: string, databaseUrl: string): string {
  if (!isPostgresUrl(databaseUrl)) return text;
  let passwords: string[];
  try {
    const url = new URL(databaseUrl);
    passwords = [url.password, safeDecode(url.password), url.searchParams.get('password') ?? ''];
  } catch {
    return hidden;
  }
  return passwords
    .filter((p) => p !== '')
    .sort((a, b) => b.length - a.length)
    .reduce((result, password) => result.split(password).join(hidden), text);
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
