/**
 * The `audience` parameter: it must name a registered API (else invalid_target, RFC 8707 §2);
 * without it the token is for the configured default audience, or the userinfo endpoint only.
 */
import { OAuthError } from '../errors.js';
import type { Config } from '../config.js';
import type { Store } from '../store/store.js';

/** The audience identifier a request gets, or invalid_target. */
export async function resolveAudience(store: Store, config: Config, requested: string | undefined): Promise<string> {
  if (requested === undefined || requested === '') return config.defaultAudience;
  const api = await store.findApi(requested);
  if (!api) {
    throw new OAuthError('invalid_target', 'The requested audience is not a registered API.', {
      detail: `unknown audience ${requested.slice(0, 200)}`,
    });
  }
  return api.identifier;
}

/** The API's name for confirmation pages; undefined for the userinfo-only default (nothing more to say). */
export async function audienceName(store: Store, config: Config, identifier: string): Promise<string | undefined> {
  if (identifier === `${config.issuer}/userinfo`) return undefined;
  return (await store.findApi(identifier))?.name ?? identifier;
}
