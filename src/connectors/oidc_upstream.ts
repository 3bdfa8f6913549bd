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
import { cleanGroups, UpstreamError, type UpstreamProfile } from './upstream_profile.js';

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
  const execute = settings.issuer.startsWith('http:') ? [oidc.allowInsecureRequests] : [];
  try {
    const config = await oidc.discovery(new URL(settings.issuer), settings.clientId, undefined, secret === undefined ? oidc.None() : oidc.ClientSecretPost(secret), {
      execute,
      timeout: timeoutSeconds,
    });
    discovered.set(connectorId, { config, at: Date.now(), key });
    return config;
  } catch (err) {
    throw new UpstreamError('The sign-in service could not be reached. Try again in a moment.', 'unreachable', describe(err));
  }
}

export async function oidcAuthorizationUrl(upstream: OidcUpstream, params: { redirectUri: string; state: string; nonce: string; codeChallenge: string }): Promise<URL> {
  const config = await configuration(upstream);
  return oidc.buildAuthorizationUrl(config, {
    redirect_uri: params.redirectUri,
    scope: upstream.settings.scope,
    state: params.state,
    nonce: params.nonce,
    code_challenge: params.codeChallenge,
    code_challenge_method: 'S256',
  });
}

/** The callback: the code redeemed and the id_token verified; the person as the upstream says. */
export async function oidcCallback(upstream: OidcUpstream, currentUrl: URL, expected: { state: string; nonce: string; codeVerifier: string }): Promise<UpstreamProfile> {
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
    throw new UpstreamError('The sign-in service answered in a way that cannot be trusted. Try again.', 'invalid_response', describe(err));
  }
  const claims = tokens.claims();
  if (!claims || typeof claims.sub !== 'string' || claims.sub === '') {
    throw new UpstreamError('The sign-in service did not say who you are.', 'invalid_response', 'no sub in the id_token');
  }
  let all: Record<string, unknown> = { ...claims };
  const needs = (name: string) => all[name] === undefined;
  if (needs('email') || needs('name') || (settings.groupsClaim !== undefined && needs(settings.groupsClaim))) {
    try {
      const userinfo = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
      all = { ...userinfo, ...all };
    } catch {
      // The id_token's claims are what there is; userinfo is optional (OIDC Core §5.3).
    }
  }
  const text = (name: string) => (typeof all[name] === 'string' && all[name] !== '' ? (all[name] as string) : undefined);
  return {
    subject: claims.sub,
    username: text('preferred_username') ?? text('nickname') ?? text('email')?.split('@')[0],
    email: text('email'),
    emailVerified: all.email_verified === true,
    name: text('name'),
    groups: settings.groupsClaim === undefined ? [] : cleanGroups(all[settings.groupsClaim]),
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
