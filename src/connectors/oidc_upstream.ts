/**
 * An upstream OpenID Provider (Google Workspace, Entra ID, Okta, Keycloak, another Latchkey), through
 * openid-client (OpenID Certified): discovery, the Authorization Code flow with PKCE S256, state and
 * nonce, the id_token checked (signature from the upstream's JWKS, issuer, audience, expiry, nonce),
 * the `iss` response parameter checked where the upstream says it sends one (RFC 9207, mix-up), and
 * userinfo when the id_token lacks the claims. Every request has a time limit
 * (LATCHKEY_UPSTREAM_TIMEOUT).
 */
import * as oidc from 'openid-client';
import type { OidcConfig } from './connector_config.js';
import type { FreshSignIn } from './runtime.js';
import { isUnreachable } from './unreachable.js';
import { networkCause, oauthErrorCode, type UpstreamCause } from './upstream_cause.js';
import { cleanGroups, misconfiguredMessage, UpstreamError, type UpstreamProfile } from './upstream_profile.js';

/** Discovery is cached this long per connector; a failure is not cached. */
const discoveryTtlMs = 10 * 60 * 1000;

const discovered = new Map<string, { config: oidc.Configuration; at: number; key: string }>();

function discoveryKey(settings: OidcConfig, secret: string | undefined, timeoutSeconds: number): string {
  return JSON.stringify([settings.issuer, settings.clientId, secret ?? '', timeoutSeconds]);
}

export interface OidcUpstream {
  connectorId: string;
  settings: OidcConfig;
  secret: string | undefined;
  timeoutSeconds: number;
}

async function configuration({ connectorId, settings, secret, timeoutSeconds }: OidcUpstream): Promise<oidc.Configuration> {
  const key = discoveryKey(settings, secret, timeoutSeconds);
  const cached = discovered.get(connectorId);
  if (cached && cached.key === key && Date.now() - cached.at < discoveryTtlMs) return cached.config;
  // The id_token's signature is checked against the upstream's JWKS too, not only its claims
  // (openid-client leaves that to enableNonRepudiationChecks for tokens from the token endpoint).
  const execute = [oidc.enableNonRepudiationChecks, ...(settings.issuer.startsWith('http:') ? [oidc.allowInsecureRequests] : [])];
  try {
    // client_secret_basic, the default of RFC 6749 §2.3.1 and of most providers' applications.
    const config = await oidc.discovery(
      new URL(settings.issuer),
      settings.clientId,
      undefined,
      secret === undefined ? oidc.None() : oidc.ClientSecretBasic(secret),
      {
        execute,
        timeout: timeoutSeconds,
      },
    );
    discovered.set(connectorId, { config, at: Date.now(), key });
    return config;
  } catch (err) {
    const { kind, cause } = discoveryCause(err, settings.issuer, timeoutSeconds);
    if (kind === 'misconfigured') throw new UpstreamError(misconfiguredMessage, 'misconfigured', cause);
    throw new UpstreamError('The sign-in service could not be reached. Try again in a moment.', 'unreachable', cause);
  }
}

/**
 * Why discovery failed, truthfully: a wrong issuer is named with the one the upstream really has
 * (the localhost-for-127.0.0.1 mistake), not reported as "cannot reach".
 */
function discoveryCause(err: unknown, issuer: string, timeoutSeconds: number): UpstreamCause {
  const network = networkCause(err, issuer, timeoutSeconds);
  if (network) return network;
  const e = err as { code?: unknown; cause?: { attribute?: unknown; body?: { issuer?: unknown }; status?: unknown } };
  if (e.code === 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED' && e.cause?.attribute === 'issuer') {
    const announced = String(e.cause.body?.issuer).slice(0, 200);
    return {
      kind: 'misconfigured',
      cause: `the issuer's discovery document names the issuer ${announced}, not ${issuer}: set the connector's issuer to ${announced}`,
    };
  }
  // An upstream answering 5xx is down for now; any other refusal of its document is a setting.
  if (typeof e.cause?.status === 'number' && e.cause.status >= 500)
    return { kind: 'unreachable', cause: `discovery at ${issuer} answered HTTP ${e.cause.status}` };
  if (isUnreachable(err)) return { kind: 'unreachable', cause: `discovery at ${issuer}: ${describe(err)}` };
  return { kind: 'misconfigured', cause: `discovery at ${issuer} failed: ${describe(err)}` };
}

export async function oidcAuthorizationUrl(
  upstream: OidcUpstream,
  params: { redirectUri: string; state: string; nonce: string; codeChallenge: string; fresh: FreshSignIn | undefined },
): Promise<URL> {
  const config = await configuration(upstream);
  return oidc.buildAuthorizationUrl(config, {
    redirect_uri: params.redirectUri,
    scope: upstream.settings.scope,
    state: params.state,
    nonce: params.nonce,
    code_challenge: params.codeChallenge,
    code_challenge_method: 'S256',
    // A client asked us for a fresh sign-in (prompt=login, max_age): the upstream's session must
    // not stand in for it, so the same is asked upstream (and auth_time checked on return).
    // With prompt=login also max_age=0 (the same request, OIDC Core §3.1.2.1), which obliges the
    // provider to send auth_time: many leave it out otherwise.
    ...(params.fresh?.promptLogin ? { prompt: 'login', max_age: '0' } : {}),
    ...(params.fresh && !params.fresh.promptLogin && params.fresh.maxAge !== undefined ? { max_age: String(params.fresh.maxAge) } : {}),
  });
}

/** Clock difference allowed between us and an upstream when judging auth_time. */
const freshSignInSkewSeconds = 60;

/** The callback: the code redeemed and the id_token verified; the person as the upstream says. */
export async function oidcCallback(
  upstream: OidcUpstream,
  currentUrl: URL,
  expected: { state: string; nonce: string; codeVerifier: string; freshSince?: number | undefined },
): Promise<UpstreamProfile> {
  const { settings } = upstream;
  const config = await configuration(upstream);
  let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
  try {
    tokens = await oidc.authorizationCodeGrant(config, currentUrl, {
      pkceCodeVerifier: expected.codeVerifier,
      expectedState: expected.state,
      expectedNonce: expected.nonce,
      idTokenExpected: true,
    });
  } catch (err) {
    const code = (err as { error?: string; cause?: { error?: string } }).error;
    if (code === 'access_denied') throw new UpstreamError('The sign-in was cancelled at the sign-in service.', 'denied');
    if (isUnreachable(err)) throw new UpstreamError('The sign-in service did not answer. Try again in a moment.', 'unreachable', describe(err));
    if (oauthErrorCode(err) === 'invalid_client') {
      throw new UpstreamError(
        misconfiguredMessage,
        'misconfigured',
        `the token endpoint refused the client ${settings.clientId} (invalid_client): check the connector's client id and secret`,
      );
    }
    throw new UpstreamError('The sign-in service answered in a way that cannot be trusted. Try again.', 'invalid_response', describe(err));
  }
  const claims = tokens.claims();
  if (!claims || typeof claims.sub !== 'string' || claims.sub === '') {
    throw new UpstreamError('The sign-in service did not say who you are.', 'invalid_response', 'no sub in the id_token');
  }
  if (expected.freshSince !== undefined) {
    // A fresh sign-in was asked for: the upstream must say the person signed in after we sent
    // them (auth_time, OIDC Core §3.1.2.1), not merely that a session of theirs was still open.
    const authTime = claims.auth_time;
    if (typeof authTime !== 'number' || authTime < expected.freshSince - freshSignInSkewSeconds) {
      throw new UpstreamError(
        'The sign-in service did not ask you to sign in again. Try again.',
        'invalid_response',
        `auth_time ${String(authTime)} is before the request`,
      );
    }
  }
  let userinfo: Record<string, unknown> = {};
  const needs = (name: string) => claims[name] === undefined;
  if (needs('email') || needs('name') || (settings.groupsClaim !== undefined && needs(settings.groupsClaim))) {
    try {
      userinfo = { ...(await oidc.fetchUserInfo(config, tokens.access_token, claims.sub)) };
    } catch {
      // The id_token's claims are what there is; userinfo is optional (OIDC Core §5.3).
    }
  }
  const all: Record<string, unknown> = { ...userinfo, ...claims };
  const text = (name: string) => (typeof all[name] === 'string' && all[name] !== '' ? all[name] : undefined);
  // email and email_verified from the same source: a `true` from userinfo says nothing about an
  // email that came in the id_token.
  const emailSource: Record<string, unknown> = claims.email !== undefined ? claims : userinfo;
  return {
    subject: claims.sub,
    username: text('preferred_username') ?? text('nickname') ?? text('email')?.split('@')[0],
    email: text('email'),
    emailVerified: typeof emailSource.email === 'string' && emailSource.email_verified === true,
    name: text('name'),
    groups: settings.groupsClaim === undefined ? [] : cleanGroups(all[settings.groupsClaim]),
    authTime: typeof claims.auth_time === 'number' && Number.isFinite(claims.auth_time) ? Math.floor(claims.auth_time) : undefined,
  };
}

function describe(err: unknown): string {
  const e = err as { message?: string; code?: string; error?: string; error_description?: string; cause?: { message?: string; code?: string } };
  return [e.code, e.error, e.error_description, e.message, e.cause?.code, e.cause?.message].filter(Boolean).join(': ').slice(0, 500);
}

/** Tests: forget what was discovered. */
export function forgetDiscovery(): void {
  discovered.clear();
}
