/**
 * The server's metadata and its signing keys (JWKS). One document serves as both the OpenID
 * Provider metadata (OIDC Discovery 1.0 §3, `/.well-known/openid-configuration`) and the OAuth
 * authorization server metadata (RFC 8414 §3, `/.well-known/oauth-authorization-server`), so the
 * two cannot disagree; the OIDC-only members are extra members RFC 8414 §2 allows.
 */
import type { FastifyInstance } from 'fastify';
import { supportedGrantTypes } from '../grants/index.js';
import { supportedScopes } from '../oauth/scope.js';
import { acrValuesSupported } from '../mfa/amr.js';
import { asymmetricAlgorithms, hmacAlgorithms } from '../oauth/client_assertion.js';
import { dpopAlgorithms } from '../oauth/dpop.js';
import { personClaims } from '../oauth/claims.js';
import { requestObjectAlgorithms } from '../oauth/request_object.js';
import { supportedLanguages } from '../i18n/languages.js';

const authorizationServerMetadataPath = '/.well-known/oauth-authorization-server';

export async function discoveryRoutes(app: FastifyInstance): Promise<void> {
  const { issuer } = app.services.config;
  const metadata = {
    issuer,
    authorization_endpoint: `${issuer}/authorize`,
    device_authorization_endpoint: `${issuer}/oauth/device/code`,
    token_endpoint: `${issuer}/oauth/token`,
    userinfo_endpoint: `${issuer}/userinfo`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    introspection_endpoint: `${issuer}/oauth/introspect`,
    // RFC 9126 §5: pushed authorization requests, required only of clients registered so.
    pushed_authorization_request_endpoint: `${issuer}/oauth/par`,
    require_pushed_authorization_requests: false,
    // RFC 7591: registration needs an initial access token (`latchkey clients registration-token`).
    registration_endpoint: `${issuer}/oauth/register`,
    jwks_uri: `${issuer}/.well-known/jwks.json`,
    // OIDC RP-Initiated Logout 1.0 and Back-Channel Logout 1.0 (logout tokens carry sid).
    end_session_endpoint: `${issuer}/logout`,
    backchannel_logout_supported: true,
    backchannel_logout_session_supported: true,
    grant_types_supported: supportedGrantTypes,
    response_types_supported: ['code'],
    response_modes_supported: ['query', 'form_post'],
    code_challenge_methods_supported: ['S256'],
    // RFC 9449 §5.1: DPoP proofs at the token endpoint (and userinfo), with these algorithms.
    dpop_signing_alg_values_supported: [...dpopAlgorithms],
    prompt_values_supported: ['none', 'login', 'consent', 'select_account'],
    authorization_response_iss_parameter_supported: true,
    // OIDC Core §6: request objects by value, unsigned or signed by the client; request_uri only
    // as a pushed request's (no fetching of addresses clients name).
    request_parameter_supported: true,
    request_object_signing_alg_values_supported: [...requestObjectAlgorithms],
    request_uri_parameter_supported: false,
    // OIDC Core §5.5: claims asked for by name, for userinfo or the id_token.
    claims_parameter_supported: true,
    claim_types_supported: ['normal'],
    display_values_supported: ['page', 'popup', 'touch'],
    // OIDC Core §3.1.2.1 ui_locales: the languages the pages are shown in (src/i18n/).
    ui_locales_supported: [...supportedLanguages],
    scopes_supported: [...supportedScopes],
    // RFC 7523 / OIDC Core §9: JWT client assertions, with the algorithms client_assertion.ts accepts.
    token_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post', 'client_secret_jwt', 'private_key_jwt'],
    token_endpoint_auth_signing_alg_values_supported: [...asymmetricAlgorithms, ...hmacAlgorithms],
    revocation_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post', 'client_secret_jwt', 'private_key_jwt'],
    revocation_endpoint_auth_signing_alg_values_supported: [...asymmetricAlgorithms, ...hmacAlgorithms],
    introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'client_secret_jwt', 'private_key_jwt'],
    introspection_endpoint_auth_signing_alg_values_supported: [...asymmetricAlgorithms, ...hmacAlgorithms],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['RS256'],
    claims_supported: ['iss', 'sub', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'at_hash', 'acr', 'amr', 'sid', ...personClaims, 'groups'],
    // urn:latchkey:mfa in acr_values asks for a second factor (not offered when they are off).
    ...(app.services.config.mfa === 'off' ? {} : { acr_values_supported: [...acrValuesSupported] }),
  };

  app.get('/.well-known/openid-configuration', async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    return metadata;
  });

  // RFC 8414 §3: the same document. For an issuer with a path, §3.1 puts the well-known segment
  // between the host and the path; a proxy that serves the issuer's path from this server's root
  // forwards that address as it is, and the plain one arrives as {issuer}/.well-known/….
  const pathInserted = `${authorizationServerMetadataPath}${new URL(issuer).pathname.replace(/\/+$/, '')}`;
  app.get(authorizationServerMetadataPath, async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    return metadata;
  });
  app.get(`${authorizationServerMetadataPath}/*`, async (request, reply) => {
    // Compared as sent (still percent-encoded, like URL.pathname): any other path is not ours.
    if (request.url.split('?')[0] !== pathInserted) {
      reply.callNotFound();
      return reply;
    }
    reply.header('cache-control', 'no-store');
    return metadata;
  });

  app.get('/.well-known/jwks.json', async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    return await app.services.signer.jwks();
  });
}
