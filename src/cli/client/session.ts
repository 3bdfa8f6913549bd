/**
 * A valid access token for a profile: the stored one while more than a minute is left, otherwise
 * a refreshed one. The refresh happens under the credentials lock and re-reads the file first, so
 * of two `latchkey token` runs at once one refreshes and the other uses its result.
 */
import { epochSeconds, systemClock } from '../../clock.js';
import { CommandError, exitCodes } from '../command.js';
import type { CredentialsStore, Profile } from './credentials.js';
import { explainClientError, oauthErrorCode } from './client_errors.js';
import { discover, oidc } from './oidc.js';
import { loginCommandLine } from './sign_in_hint.js';
import { dpopHandle } from './dpop_key.js';

/** The usual spelling of a token type (RFC 6749 token types are case-insensitive; openid-client lowercases them). */
export function tokenTypeName(value: string | undefined): string {
  const lower = (value ?? 'Bearer').toLowerCase();
  return lower === 'bearer' ? 'Bearer' : lower === 'dpop' ? 'DPoP' : String(value);
}

/** openid-client's DPoP handle for a profile signed in with `--dpop`, else undefined. */
export async function profileDpop(config: oidc.Configuration, profile: Profile): Promise<{ DPoP: oidc.DPoPHandle } | undefined> {
  return profile.dpop_jwk ? { DPoP: await dpopHandle(config, profile.dpop_jwk) } : undefined;
}

/** Refresh when less than this is left. */
export const refreshMarginSeconds = 60;

/** The command that signs `name` in again where it was signed in (its stored issuer), for messages. */
export function signInAgain(store: CredentialsStore, name: string, profile: Profile | undefined): string {
  return loginCommandLine({ profile: name, issuer: profile?.issuer, defaultIssuer: store.defaultIssuer }, profile?.dpop_jwk ? ['--dpop'] : []);
}

export function requireProfile(store: CredentialsStore, name: string): Profile {
  const profile = store.get(name);
  if (!profile) {
    throw new CommandError(
      `not signed in${name === 'default' ? '' : ` (profile "${name}")`}: run "${signInAgain(store, name, undefined)}"`,
      exitCodes.notSignedIn,
    );
  }
  return profile;
}

const fresh = (profile: Profile) => profile.expires_at - epochSeconds(systemClock) > refreshMarginSeconds;

/** `force`: refresh even if the stored token looks fresh (the server refused it). */
export async function validProfile(store: CredentialsStore, name: string, options: { force?: boolean } = {}): Promise<Profile> {
  const stored = requireProfile(store, name);
  if (fresh(stored) && !options.force) return stored;
  return store.withLock(async () => {
    const current = requireProfile(store, name);
    if (fresh(current) && (!options.force || current.access_token !== stored.access_token)) return current; // another process refreshed while we waited
    if (!current.refresh_token) {
      throw new CommandError(`the access token has expired and there is no refresh token: run "${signInAgain(store, name, current)}"`, exitCodes.notSignedIn);
    }
    const config = await discover(current.issuer, current.client_id);
    let tokens: Awaited<ReturnType<typeof oidc.refreshTokenGrant>>;
    try {
      // A DPoP-bound refresh token needs a proof by its key (RFC 9449 §5).
      tokens = await oidc.refreshTokenGrant(config, current.refresh_token, undefined, await profileDpop(config, current));
    } catch (err) {
      if (oauthErrorCode(err) === 'invalid_grant') {
        throw new CommandError(`your sign-in has ended (revoked or expired): run "${signInAgain(store, name, current)}"`, exitCodes.notSignedIn);
      }
      throw new CommandError(`could not refresh the access token: ${explainClientError(err, { issuer: current.issuer, clientId: current.client_id })}`);
    }
    const updated: Profile = {
      ...current,
      access_token: tokens.access_token,
      token_type: tokenTypeName(tokens.token_type),
      expires_at: epochSeconds(systemClock) + (tokens.expires_in ?? 0),
      refresh_token: tokens.refresh_token ?? current.refresh_token,
      scope: tokens.scope ?? current.scope,
    };
    store.set(name, updated);
    return updated;
  });
}
