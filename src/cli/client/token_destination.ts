/**
 * Where a stored token may go. A token goes only to the issuer it came from, for the audience it
 * names (RFC 9068 §4: a resource server checks `aud`, but a token the CLI hands to the wrong
 * server is already lost): the management API's token (`{issuer}/api/v1`) only to that API of
 * that issuer — never to another `--server`, nor to a git host or registry through a credential
 * helper — and a token for one of the issuer's own endpoints (userinfo) only there.
 */
import { decodeJwt } from 'jose';
import { managementAudience } from '../../management/management_api.js';
import { CommandError, exitCodes } from '../command.js';
import type { Profile } from './credentials.js';
import { printable } from './printable.js';
import { shellWord } from './sign_in_hint.js';

const withoutTrailingSlash = (url: string) => url.replace(/\/+$/, '');

/**
 * The audiences the profile's access token is for: its `aud` claim (Latchkey's access tokens are
 * JWTs, RFC 9068; read, not verified — it only narrows where the token may go), else what the
 * profile asked for at sign-in, else the issuer's userinfo endpoint (a sign-in without --audience).
 */
export function tokenAudiences(profile: Profile): string[] {
  try {
    const { aud } = decodeJwt(profile.access_token);
    if (typeof aud === 'string') return [aud];
    if (Array.isArray(aud) && aud.length > 0) return aud;
  } catch {
    // Not a JWT (another provider's opaque token): what the profile asked for is all there is.
  }
  return [profile.audience ?? `${withoutTrailingSlash(profile.issuer)}/userinfo`];
}

/** Whether the token is for the management API of its issuer. */
export function isManagementToken(profile: Profile): boolean {
  return tokenAudiences(profile).includes(managementAudience(withoutTrailingSlash(profile.issuer)));
}

/** Whether `url` is `base` or below it (same origin, and `base`'s path up to a `/`). */
function within(url: URL, base: string): boolean {
  if (!URL.canParse(base)) return false;
  const b = new URL(base);
  if (url.origin !== b.origin) return false;
  const path = b.pathname.replace(/\/+$/, '');
  return url.pathname === path || url.pathname.startsWith(`${path}/`) || path === '';
}

/**
 * Refuses unless the profile was signed in at `server` for its management API: LATCHKEY_PROFILE
 * may name a profile signed in elsewhere, whose token must never reach this server.
 */
export function requireManagementProfile(profile: Profile, name: string, server: string): void {
  const audience = managementAudience(server);
  if (withoutTrailingSlash(profile.issuer) === server && tokenAudiences(profile).includes(audience)) return;
  const held = tokenAudiences(profile).map(printable).join(', ');
  throw new CommandError(
    `the profile "${printable(name)}" (LATCHKEY_PROFILE) was signed in at ${printable(profile.issuer)} for ${held}, not for the management API of ${server}: ` +
      `its token goes only to the issuer it came from, for the audience it names. Sign in for ${server} with ` +
      `"latchkey login --profile <name> --issuer ${shellWord(server)} --audience ${shellWord(audience)}" and set LATCHKEY_PROFILE to that name`,
    exitCodes.notSignedIn,
  );
}

/**
 * Refuses a DPoP proof (RFC 9449 §4.2) for a request that would carry the token where it may not
 * go: a token for one of the issuer's own addresses (its management API, its userinfo endpoint)
 * only there. A token for an API of its own may go wherever that API is served.
 */
export function requireProofDestination(profile: Profile, name: string, url: string): void {
  const issuer = withoutTrailingSlash(profile.issuer);
  const own = tokenAudiences(profile).filter((aud) => aud === issuer || aud.startsWith(`${issuer}/`));
  if (own.length === 0) return;
  const target = new URL(url);
  if (own.some((aud) => within(target, aud))) return;
  throw new CommandError(
    `the profile "${printable(name)}" holds a token for ${own.map(printable).join(', ')}, which goes only there, not to ${printable(`${target.origin}${target.pathname}`)}: no proof is made for it`,
    exitCodes.usage,
  );
}
