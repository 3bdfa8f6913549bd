/**
 * The `audience` parameter: it must name a registered API (else invalid_target, RFC 8707 §2);
 * without it the token is for the configured default audience, or the userinfo endpoint only.
 */
import { OAuthError } from '../errors.js';
import type { Config } from '../config.js';
import type { Store } from '../store/store.js';

export interface ResolvedAudience {
  audience: string;
  /** The scopes (permissions) the API declares; none for the userinfo-only default. */
  scopes: string[];
}

/** The audience a request gets with the scopes that may be asked of it, or invalid_target. */
export async function resolveAudience(store: Store, config: Config, requested: string | undefined): Promise<ResolvedAudience> {
  const identifier = requested === undefined || requested === '' ? config.defaultAudience : requested;
  // The usual default, the userinfo endpoint, is no API: no lookup on the device flow's hot path.
  if (identifier === `${config.issuer}/userinfo`) return { audience: identifier, scopes: [] };
  const api = await store.findApi(identifier);
  if (api) return { audience: api.identifier, scopes: api.scopes };
  if (identifier === config.defaultAudience) return { audience: identifier, scopes: [] };
  throw new OAuthError('invalid_target', 'The requested audience is not a registered API.', {
    detail: `unknown audience ${identifier.slice(0, 200)}`,
  });
}

/** The API's name for confirmation pages; undefined for the userinfo-only default (nothing more to say). */
export async function audienceName(store: Store, config: Config, identifier: string): Promise<string | undefined> {
  if (identifier === `${config.issuer}/userinfo`) return undefined;
  return (await store.findApi(identifier))?.name ?? identifier;
}
