/**
 * Dynamic client registration (RFC 7591) and its management (RFC 7592): the client metadata a
 * registration may carry, checked by the rules operator-made clients follow (validation.ts)
 * and stricter where a person is not there to read a warning — a plain-http redirect URI to a host
 * that is not loopback is refused, and so is a back-channel logout URI or jwks_uri naming an
 * internal address (the server would send requests there: oauth/client_outbound.ts) — and the client
 * information response (RFC 7591 §3.2.1, RFC 7592 §3). Unknown members are ignored (RFC 7591 §2).
 * No Fastify types here.
 */
import { z } from 'zod';
import { AdminInputError, maxWebOrigins, validBackchannelLogoutUri, validName, validRedirectUri, validWebOrigins } from './validation.js';
import { validJwks, validJwksUri } from './clients.js';
import { randomString } from '../crypto/secrets.js';
import { OAuthError } from '../errors.js';
import type { OutboundAllowList } from '../net/outbound_policy.js';
import type { ClientRecord, GrantTypeName, TokenEndpointAuthMethod } from '../store/store.js';
import { registeredTargetRefusal } from '../oauth/client_outbound.js';

export const registrationPath = '/oauth/register';

/** The grant_type values a registration may name (RFC 7591 §2), and what the store calls them. */
const wireGrantTypes: Record<string, GrantTypeName> = {
  authorization_code: 'authorization_code',
  refresh_token: 'refresh_token',
  'urn:ietf:params:oauth:grant-type:device_code': 'device_code',
  client_credentials: 'client_credentials',
};

const wireNameOf: Record<GrantTypeName, string> = {
  authorization_code: 'authorization_code',
  refresh_token: 'refresh_token',
  device_code: 'urn:ietf:params:oauth:grant-type:device_code',
  client_credentials: 'client_credentials',
};

export const tokenEndpointAuthMethods = [
  'none',
  'client_secret_basic',
  'client_secret_post',
  'client_secret_jwt',
  'private_key_jwt',
] as const satisfies readonly TokenEndpointAuthMethod[];

/** How many URIs of each list one client may register. */
const maxUris = 20;

// null counts as absent: RFC 7592 §2.2 has omitted fields read as "null or empty".
const uriList = z.array(z.string().max(2048)).max(maxUris).nullish();
const metadataSchema = z.object({
  redirect_uris: uriList,
  grant_types: z.array(z.string().max(128)).max(10).nullish(),
  response_types: z.array(z.string().max(128)).max(10).nullish(),
  token_endpoint_auth_method: z.enum(tokenEndpointAuthMethods).nullish(),
  client_name: z.string().max(256).nullish(),
  post_logout_redirect_uris: uriList,
  // The origins whose browser code may call the token, userinfo, revocation and device endpoints
  // (CORS), by the name Auth0 gives this metadata; RFC 7591 §2 lets a server define members.
  web_origins: z.array(z.string().max(512)).max(maxWebOrigins).nullish(),
  backchannel_logout_uri: z.string().max(2048).nullish(),
  jwks_uri: z.string().max(2048).nullish(),
  jwks: z.record(z.string(), z.unknown()).nullish(),
  // Accepted and ignored: what a client may ask for is decided per API, by roles and grants.
  scope: z.string().max(2048).nullish(),
  // RFC 7592 §2.2: an update names the client, and may repeat its current secret.
  client_id: z.string().max(256).nullish(),
  client_secret: z.string().max(512).nullish(),
});

/** Registered metadata, validated and in the store's terms. */
export interface ClientMetadata {
  name: string | undefined;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  webOrigins: string[];
  backchannelLogoutUri: string | undefined;
  grantTypes: GrantTypeName[];
  method: TokenEndpointAuthMethod;
  jwksUri: string | undefined;
  jwks: { keys: Record<string, unknown>[] } | undefined;
  /** As sent (RFC 7592 updates): checked by the caller against the client. */
  clientId: string | undefined;
  clientSecret: string | undefined;
}

const invalidMetadata = (description: string, detail?: string) =>
  new OAuthError('invalid_client_metadata', description, detail === undefined ? {} : { detail });
const invalidRedirectUri = (description: string, detail?: string) =>
  new OAuthError('invalid_redirect_uri', description, detail === undefined ? {} : { detail });

/** What a check of validation.ts said, for the log only (its sentences quote the input). */
function reason(err: unknown): string {
  if (err instanceof AdminInputError) return err.message;
  throw err;
}

function redirectUris(values: string[], refuse: (description: string, detail?: string) => OAuthError, member: string): string[] {
  const uris: string[] = [];
  for (const value of values) {
    let check;
    try {
      check = validRedirectUri(value);
    } catch (err) {
      throw refuse(
        `Every ${member} entry must be an absolute URI without a fragment: https, http to a loopback host, or a private-use scheme named like a reverse domain.`,
        reason(err),
      );
    }
    // `clients add` only warns about these; nobody reads a warning on this endpoint.
    if (check.warning !== undefined) throw refuse(`A ${member} entry uses plain http to a host that is not loopback; use https.`, check.warning);
    if (!uris.includes(check.uri)) uris.push(check.uri);
  }
  return uris;
}

/**
 * Refuses a URI the server would send requests to when it names an internal host outright (a
 * literal loopback, private or link-local address, `localhost`) that the operator did not allow:
 * caught here, the client learns at once; names that resolve inside are refused when used.
 */
function refuseInternalTarget(member: string, uri: string | undefined, allow: OutboundAllowList): void {
  if (uri === undefined) return;
  const refusal = registeredTargetRefusal(uri, allow);
  if (refusal !== undefined)
    throw invalidMetadata(
      `${member} must name a public host: the server does not send requests to loopback, private or link-local addresses for registered clients.`,
      refusal,
    );
}

/**
 * The metadata of a registration request or an RFC 7592 update, or invalid_redirect_uri /
 * invalid_client_metadata saying what is wrong (RFC 7591 §3.2.2). Omitted members take the defaults
 * of RFC 7591 §2: grant_types authorization_code, response_types code, client_secret_basic.
 * `outboundAllow` (LATCHKEY_OUTBOUND_ALLOW) names the internal hosts a client may still use.
 */
export function parseClientMetadata(input: unknown, options: { outboundAllow: OutboundAllowList }): ClientMetadata {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw invalidMetadata('The request body must be a JSON object of client metadata.');
  const parsed = metadataSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    // path[0] is a member of our schema (others are ignored before this), never the sender's text.
    const member = issue?.path[0] === undefined ? 'metadata' : String(issue.path[0]);
    const detail = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    if (member === 'redirect_uris') throw invalidRedirectUri('redirect_uris must be an array of at most 20 URIs.', detail);
    if (member === 'token_endpoint_auth_method') {
      throw invalidMetadata('token_endpoint_auth_method must be none, client_secret_basic, client_secret_post, client_secret_jwt or private_key_jwt.', detail);
    }
    throw invalidMetadata(`The ${member} member has the wrong type or is too long.`, detail);
  }
  const m = parsed.data;

  const grantTypes: GrantTypeName[] = [];
  for (const value of m.grant_types ?? ['authorization_code']) {
    const grant = Object.hasOwn(wireGrantTypes, value) ? wireGrantTypes[value] : undefined;
    if (grant === undefined)
      throw invalidMetadata(
        'grant_types may hold authorization_code, refresh_token, urn:ietf:params:oauth:grant-type:device_code and client_credentials only.',
        `grant type ${value.slice(0, 80)}`,
      );
    if (!grantTypes.includes(grant)) grantTypes.push(grant);
  }
  if (grantTypes.length === 0) throw invalidMetadata('grant_types must name at least one grant type.');
  const usesCode = grantTypes.includes('authorization_code');

  // RFC 7591 §2.1: response type code goes with grant type authorization_code, and only with it.
  const responseTypes = m.response_types ?? (usesCode ? ['code'] : []);
  if (responseTypes.some((type) => type !== 'code')) throw invalidMetadata('response_types may hold code only.');
  if (responseTypes.includes('code') !== usesCode) throw invalidMetadata('response_types and grant_types do not agree: code goes with authorization_code.');

  const uris = redirectUris(m.redirect_uris ?? [], invalidRedirectUri, 'redirect_uris');
  if (usesCode && uris.length === 0) throw invalidRedirectUri('redirect_uris is required for the authorization_code grant.');
  const postLogoutRedirectUris = redirectUris(m.post_logout_redirect_uris ?? [], invalidMetadata, 'post_logout_redirect_uris');
  let webOrigins: string[];
  try {
    webOrigins = validWebOrigins(m.web_origins ?? []);
  } catch (err) {
    throw invalidMetadata('Every web_origins entry must be an origin, scheme://host[:port] with no path: https, or http to a loopback host.', reason(err));
  }

  let backchannelLogoutUri: string | undefined;
  try {
    backchannelLogoutUri = validBackchannelLogoutUri(m.backchannel_logout_uri ?? undefined);
  } catch (err) {
    throw invalidMetadata(
      'backchannel_logout_uri must be an https URL without a fragment or credentials (plain http only to a loopback address the operator allows).',
      reason(err),
    );
  }
  refuseInternalTarget('backchannel_logout_uri', backchannelLogoutUri, options.outboundAllow);

  const method = m.token_endpoint_auth_method ?? 'client_secret_basic';
  const jwksUriValue = m.jwks_uri ?? undefined;
  const jwksValue = m.jwks ?? undefined;
  // RFC 7591 §2: never both. Keys here serve private_key_jwt only, and a client with keys may use nothing else.
  if (jwksUriValue !== undefined && jwksValue !== undefined) throw invalidMetadata('jwks and jwks_uri must not both be present.');
  if (method !== 'private_key_jwt' && (jwksUriValue !== undefined || jwksValue !== undefined))
    throw invalidMetadata('jwks and jwks_uri are accepted only with private_key_jwt.');
  if (method === 'private_key_jwt' && jwksUriValue === undefined && jwksValue === undefined)
    throw invalidMetadata('private_key_jwt needs the public keys: jwks or jwks_uri.');
  let jwksUri: string | undefined;
  let jwks: { keys: Record<string, unknown>[] } | undefined;
  try {
    jwksUri = jwksUriValue === undefined ? undefined : validJwksUri(jwksUriValue);
  } catch (err) {
    throw invalidMetadata(
      'jwks_uri must be an https URL without a fragment or credentials (plain http only to a loopback address the operator allows).',
      reason(err),
    );
  }
  refuseInternalTarget('jwks_uri', jwksUri, options.outboundAllow);
  try {
    jwks = jwksValue === undefined ? undefined : validJwks(JSON.stringify(jwksValue));
  } catch (err) {
    throw invalidMetadata('jwks must be a JWK Set of at most 20 public RSA, EC or OKP signing keys, with no private key material.', reason(err));
  }

  if (grantTypes.includes('client_credentials') && method === 'none')
    throw invalidMetadata('client_credentials is for confidential clients: choose a token_endpoint_auth_method other than none.');

  // A name is shown on consent pages: no control or invisible formatting characters (bidi overrides).
  const clientName = m.client_name ?? undefined;
  if (clientName !== undefined && /[\p{Cc}\p{Cf}]/u.test(clientName)) throw invalidMetadata('client_name must not contain control or formatting characters.');

  return {
    name: validName(clientName),
    redirectUris: uris,
    postLogoutRedirectUris,
    webOrigins,
    backchannelLogoutUri,
    grantTypes,
    method,
    jwksUri,
    jwks,
    clientId: m.client_id ?? undefined,
    clientSecret: m.client_secret ?? undefined,
  };
}

/** A client_id of our choosing: never UUID-shaped (validClientId keeps those for people), 142 random bits. */
export function newRegisteredClientId(): string {
  return `dyn_${randomString('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789', 24)}`;
}

/** Whether the method authenticates with a client secret, and whether that secret must be kept sealed. */
export function secretKind(method: TokenEndpointAuthMethod): 'digest' | 'sealed' | undefined {
  if (method === 'client_secret_basic' || method === 'client_secret_post') return 'digest';
  return method === 'client_secret_jwt' ? 'sealed' : undefined;
}

/** The metadata as a ClientRecord's changeable fields (RFC 7592 replaces them all). */
export function metadataChanges(
  clientId: string,
  m: ClientMetadata,
): Pick<
  ClientRecord,
  'name' | 'redirectUris' | 'postLogoutRedirectUris' | 'webOrigins' | 'backchannelLogoutUri' | 'grantTypes' | 'requirePkce' | 'jwksUri' | 'jwks'
> {
  return {
    name: m.name ?? clientId,
    redirectUris: m.redirectUris,
    postLogoutRedirectUris: m.postLogoutRedirectUris,
    webOrigins: m.webOrigins,
    backchannelLogoutUri: m.backchannelLogoutUri,
    grantTypes: m.grantTypes,
    // Public clients must use PKCE, as `clients add` has it; confidential ones may.
    requirePkce: m.method === 'none',
    jwksUri: m.jwksUri,
    jwks: m.jwks,
  };
}

/**
 * The method a client uses as far as its credentials allow: what it registered when that still
 * fits (an operator may have changed its keys or secret since), else what the credentials imply.
 */
export function authMethodOf(client: ClientRecord): TokenEndpointAuthMethod {
  const hasKeys = client.jwks !== undefined || client.jwksUri !== undefined;
  const registered = client.tokenEndpointAuthMethod;
  if (hasKeys) return 'private_key_jwt';
  if (client.secretHash === undefined) return 'none';
  if (registered === 'client_secret_post' || registered === 'client_secret_basic') return registered;
  if (registered === 'client_secret_jwt' && client.secretSealed !== undefined) return registered;
  return 'client_secret_basic';
}

/**
 * The client information response (RFC 7591 §3.2.1, RFC 7592 §3): the registered metadata, the
 * registration access token (as presented or just issued: only its digest is stored) and, when one
 * was just issued, the client secret. client_secret_expires_at 0: secrets do not expire.
 */
export function clientInformation(
  client: ClientRecord,
  issuer: string,
  tokens: { registrationAccessToken: string; clientSecret?: string | undefined },
): Record<string, unknown> {
  const method = authMethodOf(client);
  return {
    client_id: client.clientId,
    client_id_issued_at: client.createdAt,
    ...(tokens.clientSecret === undefined ? {} : { client_secret: tokens.clientSecret }),
    ...(secretKind(method) === undefined ? {} : { client_secret_expires_at: 0 }),
    registration_access_token: tokens.registrationAccessToken,
    registration_client_uri: `${issuer}${registrationPath}/${encodeURIComponent(client.clientId)}`,
    client_name: client.name,
    redirect_uris: client.redirectUris,
    grant_types: client.grantTypes.map((grant) => wireNameOf[grant]),
    response_types: client.grantTypes.includes('authorization_code') ? ['code'] : [],
    token_endpoint_auth_method: method,
    ...(client.postLogoutRedirectUris.length === 0 ? {} : { post_logout_redirect_uris: client.postLogoutRedirectUris }),
    ...(client.webOrigins.length === 0 ? {} : { web_origins: client.webOrigins }),
    ...(client.backchannelLogoutUri === undefined ? {} : { backchannel_logout_uri: client.backchannelLogoutUri }),
    ...(client.jwksUri === undefined ? {} : { jwks_uri: client.jwksUri }),
    ...(client.jwks === undefined ? {} : { jwks: client.jwks }),
  };
}
