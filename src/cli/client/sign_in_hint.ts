/**
 * The `latchkey login …` command every "sign in again" message names: with `--profile` and
 * `--issuer` whenever they are not the defaults, so that the command a person copies signs the
 * same profile in again at the same server, whatever their environment says.
 */

/** A word as a POSIX shell reads it, for commands we tell people to run. */
export function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

export interface SignInTarget {
  /** The profile's name. */
  profile: string;
  /** The issuer it is signed in at, when known. */
  issuer?: string | undefined;
  /** The issuer `latchkey login` uses when given none: LATCHKEY_ISSUER, else http://localhost:3000. */
  defaultIssuer: string;
}

/** `latchkey login [options…] [--profile P] [--issuer URL]`; `options` come first (e.g. ['--device']). */
export function loginCommandLine(target: SignInTarget, options: string[] = []): string {
  const words = ['latchkey', 'login', ...options];
  if (target.profile !== 'default') words.push('--profile', shellWord(target.profile));
  if (target.issuer !== undefined && target.issuer.replace(/\/+$/, '') !== target.defaultIssuer) words.push('--issuer', shellWord(target.issuer));
  return words.join(' ');
}
