/**
 * `latchkey status`: every stored sign-in at a glance — profile, issuer, whose account, until when
 * its access token holds, whether it can be renewed, whether it is bound to a key (DPoP), client
 * and audience — read from the credentials file alone: it asks no server and changes nothing, so
 * it is quick and never rotates a token. No token, key or refresh token is ever printed.
 */
import { homedir } from 'node:os';
import { decodeJwt } from 'jose';
import { epochSeconds, systemClock } from '../../clock.js';
import { loadClientConfig } from '../../config.js';
import { defineCommand, exitCodes } from '../command.js';
import { isoTime, json } from '../output.js';
import { visible } from '../terminal_text.js';
import { CredentialsStore, type Profile, type StoredProfile } from './credentials.js';
import { signInAgain } from './session.js';
import { loginCommandLine } from './sign_in_hint.js';

/** `valid`: the access token holds; `renewable`: it expired, a refresh token is kept; `expired`: sign in again; `damaged`: unreadable. */
export type SignInState = 'valid' | 'renewable' | 'expired' | 'damaged';

export interface ProfileStatus {
  profile: string;
  state: SignInState;
  issuer: string | null;
  account: { sub: string | null; preferred_username: string | null; email: string | null } | null;
  client_id: string | null;
  audience: string | null;
  access_token_expires_at: string | null;
  refresh_token: boolean;
  dpop: boolean;
  /** What to run to sign in again, for every state but `valid`. */
  sign_in: string | null;
}

/**
 * Whose sign-in it is, from the stored id_token's claims (decoded, not verified: it was checked, or
 * taken straight from the token endpoint, when it was stored, and is only shown), else from what
 * userinfo said at sign-in. An id_token for another issuer or client is not believed.
 */
function account(profile: Profile): ProfileStatus['account'] {
  if (!profile.id_token) return fromUserinfo(profile);
  try {
    const claims = decodeJwt(profile.id_token);
    const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (claims.iss !== profile.issuer || !audiences.includes(profile.client_id)) return fromUserinfo(profile);
    const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : null);
    return { sub: text(claims.sub), preferred_username: text(claims.preferred_username), email: text(claims.email) };
  } catch {
    return fromUserinfo(profile);
  }
}

/** The account the userinfo endpoint named when the profile was signed in. */
function fromUserinfo(profile: Profile): ProfileStatus['account'] {
  const a = profile.account;
  return a ? { sub: a.sub, preferred_username: a.preferred_username ?? null, email: a.email ?? null } : null;
}

export function profileStatus(entry: StoredProfile, store: CredentialsStore, now: number): ProfileStatus {
  if ('damaged' in entry) {
    return {
      profile: entry.name,
      state: 'damaged',
      issuer: entry.issuer ?? null,
      account: null,
      client_id: null,
      audience: null,
      access_token_expires_at: null,
      refresh_token: false,
      dpop: false,
      sign_in: loginCommandLine({ profile: entry.name, issuer: entry.issuer, defaultIssuer: store.defaultIssuer }),
    };
  }
  const { name, profile } = entry;
  const live = profile.expires_at > now;
  const state: SignInState = live ? 'valid' : profile.refresh_token ? 'renewable' : 'expired';
  return {
    profile: name,
    state,
    issuer: profile.issuer,
    account: account(profile),
    client_id: profile.client_id,
    audience: profile.audience ?? null,
    access_token_expires_at: isoTime(profile.expires_at),
    refresh_token: profile.refresh_token !== undefined,
    dpop: profile.dpop_jwk !== undefined,
    sign_in: state === 'valid' ? null : signInAgain(store, name, profile),
  };
}

/** "in 59 min", "3 h ago": how far a time is from now, roughly. */
export function relativeTime(atIso: string, now: number): string {
  const seconds = Math.round(Date.parse(atIso) / 1000 - now);
  const size = Math.abs(seconds);
  const amount =
    size < 90
      ? `${size} s`
      : size < 90 * 60
        ? `${Math.round(size / 60)} min`
        : size < 48 * 3600
          ? `${Math.round(size / 3600)} h`
          : `${Math.round(size / 86400)} days`;
  return seconds >= 0 ? `in ${amount}` : `${amount} ago`;
}

function accountText(status: ProfileStatus): string {
  const a = status.account;
  if (!a) return '-';
  const name = a.preferred_username ?? a.sub ?? '?';
  return a.email && a.email !== name ? `${name} <${a.email}>` : name;
}

function tokenText(status: ProfileStatus, now: number): string {
  if (status.state === 'damaged' || status.access_token_expires_at === null) return 'damaged';
  const when = relativeTime(status.access_token_expires_at, now);
  return status.state === 'valid' ? `valid, expires ${when}` : `expired ${when}`;
}

/** A plain table: one row per profile, columns padded to their widest cell. */
function table(rows: string[][]): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, column) => (widths[column] = Math.max(widths[column] ?? 0, cell.length)));
  return rows.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0))).join('  ')).join('\n') + '\n';
}

/** What to do about a sign-in that is not valid now, in a sentence. */
function hint(status: ProfileStatus): string | undefined {
  switch (status.state) {
    case 'valid':
      return undefined;
    case 'renewable':
      return `${status.profile}: the access token expired; the next "latchkey token" renews it. Should that fail (the sign-in ended), run "${status.sign_in}"`;
    case 'expired':
      return `${status.profile}: the sign-in has expired and cannot be renewed: run "${status.sign_in}"`;
    case 'damaged':
      return `${status.profile}: this profile is damaged: run "${status.sign_in}"`;
  }
}

export const statusCommand = defineCommand({
  usage: 'latchkey status [--json]',
  help: [
    'Options:',
    '  --json            print the profiles as JSON: {"credentials_file", "profiles": [{profile, state,',
    '                    issuer, account, client_id, audience, access_token_expires_at, refresh_token,',
    '                    dpop, sign_in}]}; state is valid, renewable, expired or damaged',
    '  Reads only ~/.latchkey/credentials.json (LATCHKEY_HOME replaces ~/.latchkey); asks no server.',
    '  Prints no token. Exit code 0, also when no one is signed in.',
    '',
  ].join('\n'),
  positionals: { min: 0, max: 0 },
  options: { json: { type: 'boolean' } },
  async run(context) {
    const client = loadClientConfig(context.env, homedir());
    const store = new CredentialsStore(client.home, client.issuer);
    const now = epochSeconds(systemClock);
    const statuses = store.list().map((entry) => profileStatus(entry, store, now));
    if (context.values.json) {
      context.stdout.write(json({ credentials_file: store.path, profiles: statuses }));
      return exitCodes.ok;
    }
    if (statuses.length === 0) {
      context.stdout.write(`Not signed in: no profile is stored in ${store.path}. Sign in with "latchkey login".\n`);
      return exitCodes.ok;
    }
    const rows = [
      ['PROFILE', 'ISSUER', 'ACCOUNT', 'ACCESS TOKEN', 'REFRESH', 'DPOP', 'CLIENT', 'AUDIENCE'],
      ...statuses.map((s) => [
        s.profile,
        s.issuer ?? '-',
        accountText(s),
        tokenText(s, now),
        s.refresh_token ? 'yes' : 'no',
        s.dpop ? 'yes' : 'no',
        s.client_id ?? '-',
        s.audience ?? '-',
      ]),
    ].map((row) => row.map(visible));
    const hints = statuses.map(hint).filter((line) => line !== undefined);
    // Names and emails are the server's, profile names the file's: shown, never run.
    context.stdout.write(table(rows) + (hints.length > 0 ? `\n${hints.map(visible).join('\n')}\n` : ''));
    return exitCodes.ok;
  },
});
