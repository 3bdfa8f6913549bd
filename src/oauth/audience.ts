/**
 * The `audience` parameter: it must name a registered API (else invalid_target, RFC 8707 §2);
 * without it the token is for the configured default audience, or the userinfo endpoint only.
 */
import { OAuthError } from '../errors.js';
import type { Config } from '../config.js';
import type { Store } from '../store/store.js';

export interface ResolvedAudience {
  identifier: string;
  /** A name a person understands, for confirmation pages. */
  name: string;
}

export async function resolveAudience(store: Store, config: Config, requested: string | undefined): Promise<ResolvedAudience> {
  if (requested === undefined || requested === '') {
    if (config.defaultAudience === `${config.issuer}/userinfo`) {
      return { identifier: config.defaultAudience, name: 'your basic profile' };
    }
    const api = await store.findApi(config.defaultAudience);
    return { identifier: config.defaultAudience, name: api?.name ?? config.defaultAudience };
  }
  const api = await store.findApi(requested);
  if (!api) {
    throw new OAuthError('invalid_target', 'The requested audience is not a registered API.', {
      detail: `unknown audience ${requested.slice(0, 200)}`,
    });
  }
  return { identifier: api.identifier, name: api.name };
}

export async function audienceName(store: Store, config: Config, identifier: string): Promise<string> {
  if (identifier === `${config.issuer}/userinfo`) return 'your basic profile';
  return (await store.findApi(identifier))?.name ?? identifier;
}
