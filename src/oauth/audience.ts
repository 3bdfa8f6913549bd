/**
 * The target of a token: `audience`, or `resource` (RFC 8707 §2: an absolute URI without a
 * fragment). Either must name a registered API (else invalid_target, RFC 8707 §2); without them
 * the token is for the configured default audience, or the userinfo endpoint only. An access
 * token here has one audience, so a grant holds one target; at the token endpoint a request may
 * name it again (RFC 8707 §2.2) but never another one.
 */
import { OAuthError } from '../errors.js';
import type { Config } from '../config.js';
import type { Store } from '../store/store.js';

export interface ResolvedAudience {
  audience: string;
  /** The scopes (permissions) the API declares; none for the userinfo-only default. */
  scopes: string[];
}

/** The target parameters as a request carries them, each once at most. */
export interface TargetParameters {
  audience?: string | undefined;
  resource?: string | undefined;
}

/** Longest `audience` or `resource` accepted: an API identifier is at most this long too. */
export const maxTargetLength = 2048;

/**
 * RFC 8707 §2, absolute-URI of RFC 3986 §4.3: a scheme, then printable ASCII with no fragment.
 * A query is allowed (the RFC discourages it, but permits it).
 */
const absoluteUriWithoutFragment = /^[A-Za-z][A-Za-z0-9+.-]*:[\x21\x22\x24-\x7e]*$/;

/** Whether a parsed form or query sent `resource` more than once. */
export function hasSeveralResources(parameters: unknown): boolean {
  return typeof parameters === 'object' && parameters !== null && Array.isArray((parameters as Record<string, unknown>).resource);
}

/**
 * RFC 8707 §2 lets a client send `resource` several times for a token good at several APIs. Here
 * an access token has one audience (`aud`), so such a request is refused as invalid_target, with a
 * description that says why — ahead of the generic repeated-parameter rule (invalid_request).
 */
export function severalResources(): OAuthError {
  return new OAuthError('invalid_target', 'Only one resource can be requested: an access token here is for one API.', {
    detail: 'several resource parameters',
  });
}

/** Refuses a parsed form or query that sent `resource` more than once (see severalResources). */
export function refuseSeveralResources(parameters: unknown): void {
  if (hasSeveralResources(parameters)) throw severalResources();
}

/**
 * The target a request names, or undefined for none: `resource` must be an absolute URI without a
 * fragment (RFC 8707 §2); `resource` and `audience` together must name the same target. An empty
 * value counts as not sent, as an empty `audience` always has.
 */
export function requestedTarget(parameters: TargetParameters): string | undefined {
  const audience = parameters.audience === '' ? undefined : parameters.audience;
  const resource = parameters.resource === '' ? undefined : parameters.resource;
  if (resource !== undefined && !absoluteUriWithoutFragment.test(resource)) {
    throw new OAuthError('invalid_target', 'The resource must be an absolute URI without a fragment.', {
      detail: `malformed resource ${resource.slice(0, 200)}`,
    });
  }
  if (resource !== undefined && audience !== undefined && resource !== audience) {
    throw new OAuthError('invalid_target', 'The resource and audience parameters name different targets.', {
      detail: `resource ${resource.slice(0, 200)} and audience ${audience.slice(0, 200)}`,
    });
  }
  return resource ?? audience;
}

/** Whether an identifier is a target tokens can be issued for: the userinfo endpoint, the default, or a registered API. */
async function isKnownTarget(store: Store, config: Config, identifier: string): Promise<boolean> {
  if (identifier === `${config.issuer}/userinfo` || identifier === config.defaultAudience) return true;
  return (await store.findApi(identifier)) !== undefined;
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

/**
 * The audience of the access token a token request gets from a grant (an authorization code, a
 * refresh family, a device grant) that holds `granted`: that one, named or not (RFC 8707 §2.2: the
 * request narrows the token to targets the grant allows). Any other target is invalid_target —
 * never widened to an API the person did not approve, never silently ignored.
 */
export async function narrowedAudience(store: Store, config: Config, granted: string, requested: string | undefined): Promise<string> {
  if (requested === undefined || requested === granted) return granted;
  // Told apart for the client's developer: a misspelt API, or one the sign-in did not cover.
  if (!(await isKnownTarget(store, config, requested))) {
    throw new OAuthError('invalid_target', 'The requested audience is not a registered API.', { detail: `unknown target ${requested.slice(0, 200)}` });
  }
  throw new OAuthError('invalid_target', 'The requested audience was not granted by this authorization.', {
    detail: `target ${requested.slice(0, 200)} not granted (granted: ${granted.slice(0, 200)})`,
  });
}

/** The API's name for confirmation pages; undefined for the userinfo-only default (nothing more to say). */
export async function audienceName(store: Store, config: Config, identifier: string): Promise<string | undefined> {
  if (identifier === `${config.issuer}/userinfo`) return undefined;
  return (await store.findApi(identifier))?.name ?? identifier;
}
