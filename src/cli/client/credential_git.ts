/**
 * `latchkey credential git <get|store|erase>`: git's credential-helper protocol (gitcredentials(7),
 * git-credential(1)). `get` reads `key=value` lines up to a blank line or the end of input and
 * answers with the access token as the password, but only for https (a token never goes over plain
 * http) and, with --host, only for those hosts. `store` and `erase` do nothing: latchkey owns the token.
 */
import { epochSeconds, systemClock } from '../../clock.js';
import { CommandError, exitCodes, defineCommand } from '../command.js';
import { audienceOptionHelp, helperProfile, hostListed, readInput } from './credential_helper.js';
import { clientHelp } from './help.js';

/** The attributes a helper's answer depends on (git sends more; the rest are ignored). */
export interface GitCredentialRequest {
  protocol?: string;
  host?: string;
  path?: string;
  username?: string;
  password?: string;
}

const known = new Set(['protocol', 'host', 'path', 'username', 'password']);

/** `url=` stands for its parts and replaces whatever came before it, as in git's own reader. */
function fromUrl(value: string): GitCredentialRequest {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new CommandError('the url attribute is not a URL', exitCodes.usage);
  }
  const request: GitCredentialRequest = { protocol: url.protocol.replace(/:$/, '') };
  if (url.host) request.host = url.host;
  const path = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (path) request.path = path;
  if (url.username) request.username = decodeURIComponent(url.username);
  if (url.password) request.password = decodeURIComponent(url.password);
  return request;
}

/** Parses git's request: `key=value` lines, ended by a blank line or the end of the text. */
export function parseGitCredentialRequest(text: string): GitCredentialRequest {
  let request: GitCredentialRequest = {};
  for (const raw of text.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line === '') break;
    const equals = line.indexOf('=');
    if (equals <= 0) continue; // not an attribute: git never sends one, so nothing to act on
    const key = line.slice(0, equals);
    const value = line.slice(equals + 1);
    if (key === 'url') request = fromUrl(value);
    else if (known.has(key)) request[key as keyof GitCredentialRequest] = value;
  }
  return request;
}

/** Whether to hand the token out for this request: https only, and one of `hosts` when any are given. */
export function answersFor(request: GitCredentialRequest, hosts: readonly string[]): boolean {
  if (request.protocol?.toLowerCase() !== 'https' || !request.host) return false;
  return hosts.length === 0 || hostListed(request.host, hosts);
}

/** Formats an answer; a value with a line break or NUL would inject attributes, so it is refused. */
export function formatGitCredential(attributes: ReadonlyArray<readonly [string, string]>): string {
  return attributes
    .map(([key, value]) => {
      if (/[\r\n\0]/.test(key + value)) throw new CommandError(`the ${key} attribute cannot hold a line break or NUL`);
      return `${key}=${value}\n`;
    })
    .join('');
}

export const defaultGitUsername = 'oauth2';

export const credentialGitCommand = defineCommand({
  usage:
    'latchkey credential git [--profile P] [--audience A] [--host H]… [--username U] get|store|erase\n' +
    "       e.g. git config --global credential.https://git.example.com.helper '!latchkey credential git'",
  help: clientHelp(
    [
      '  --host H          answer only for this host (host[:port]; repeatable); default: any https host',
      '                    the helper is configured for (scope it with credential.<url>.helper)',
      `  --username U      the username to answer with (default: ${defaultGitUsername}); a username in the`,
      '                    remote URL is kept',
      audienceOptionHelp,
    ].join('\n'),
  ),
  positionals: { min: 1, max: 1 },
  options: {
    profile: { type: 'string' },
    audience: { type: 'string' },
    host: { type: 'string', multiple: true },
    username: { type: 'string' },
  },
  async run(context) {
    const action = context.positionals[0];
    const request = parseGitCredentialRequest(await readInput(context.stdin, { untilBlankLine: true }));
    // store, erase and operations added to git later are for helpers that keep credentials: ignore them.
    if (action !== 'get') return exitCodes.ok;
    if (!answersFor(request, context.values.host ?? [])) return exitCodes.ok;
    const profile = await helperProfile(context);
    const attributes: [string, string][] = [];
    if (!request.username) attributes.push(['username', context.values.username || defaultGitUsername]);
    attributes.push(['password', profile.access_token]);
    // git 2.41+ does not reuse the token past this; older versions ignore the attribute.
    if (profile.expires_at > epochSeconds(systemClock)) attributes.push(['password_expiry_utc', String(Math.floor(profile.expires_at))]);
    context.stdout.write(formatGitCredential(attributes));
    return exitCodes.ok;
  },
});
