/**
 * Config OP plan: oidcc-discovery-endpoint-verification, condition by condition (names in the
 * comments), plus the JWKS checks every Basic OP module makes in its configuration
 * (CheckForKeyIdInServerJWKs, CheckDistinctKeyIdValueInServerJWKs, no private or symmetric keys).
 */
import { createPublicKey } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeProtectedHeader } from 'jose';
import { rotateSigningKeysNow } from '../../src/crypto/signing_key_rotation.js';
import { codeFlow, discoveryUrl, opFetch, startOp, Tester, type Op } from './suite.js';

let op: Op;
let metadata: Record<string, unknown>;
let response: Response;
beforeAll(async () => {
  op = await startOp();
  // GetDynamicServerConfiguration: a plain GET, redirects not followed.
  response = await opFetch(op, discoveryUrl);
  metadata = (await response.clone().json()) as Record<string, unknown>;
});
afterAll(async () => {
  await op?.close();
});

const httpsUrl = (value: unknown) => typeof value === 'string' && new URL(value).protocol === 'https:';

/** The top-level keys the suite's metadata schema knows (CheckForUnexpectedParametersInServerMetadata warns on others). */
const knownMetadata = new Set([
  'issuer',
  'authorization_endpoint',
  'token_endpoint',
  'userinfo_endpoint',
  'jwks_uri',
  'registration_endpoint',
  'scopes_supported',
  'response_types_supported',
  'response_modes_supported',
  'grant_types_supported',
  'acr_values_supported',
  'subject_types_supported',
  'id_token_signing_alg_values_supported',
  'id_token_encryption_alg_values_supported',
  'id_token_encryption_enc_values_supported',
  'userinfo_signing_alg_values_supported',
  'userinfo_encryption_alg_values_supported',
  'userinfo_encryption_enc_values_supported',
  'request_object_signing_alg_values_supported',
  'request_object_encryption_alg_values_supported',
  'request_object_encryption_enc_values_supported',
  'token_endpoint_auth_methods_supported',
  'token_endpoint_auth_signing_alg_values_supported',
  'display_values_supported',
  'claim_types_supported',
  'claims_supported',
  'service_documentation',
  'claims_locales_supported',
  'ui_locales_supported',
  'claims_parameter_supported',
  'request_parameter_supported',
  'request_uri_parameter_supported',
  'require_request_uri_registration',
  'op_policy_uri',
  'op_tos_uri',
  'revocation_endpoint',
  'revocation_endpoint_auth_methods_supported',
  'revocation_endpoint_auth_signing_alg_values_supported',
  'introspection_endpoint',
  'introspection_endpoint_auth_methods_supported',
  'introspection_endpoint_auth_signing_alg_values_supported',
  'code_challenge_methods_supported',
  'end_session_endpoint',
  'check_session_iframe',
  'frontchannel_logout_supported',
  'frontchannel_logout_session_supported',
  'backchannel_logout_supported',
  'backchannel_logout_session_supported',
  'device_authorization_endpoint',
  'pushed_authorization_request_endpoint',
  'require_pushed_authorization_requests',
  'dpop_signing_alg_values_supported',
  'authorization_response_iss_parameter_supported',
  'prompt_values_supported',
]);

describe('oidcc-discovery-endpoint-verification', () => {
  it('answers 200 with application/json at <issuer>/.well-known/openid-configuration (EnsureDiscoveryEndpointResponseStatusCodeIs200, CheckDiscoveryEndpointReturnedJsonContentType)', () => {
    expect(response.status).toBe(200);
    expect((response.headers.get('content-type') ?? '').split(';')[0]!.trim()).toBe('application/json');
  });

  it('the issuer is the discovery URL without the well-known suffix, an https URL without query, fragment or userinfo (CheckDiscEndpointIssuer, CheckDiscEndpointIssuerIsValidUrl)', () => {
    expect(discoveryUrl.endsWith('/.well-known/openid-configuration')).toBe(true);
    expect(metadata.issuer).toBe(discoveryUrl.slice(0, -'/.well-known/openid-configuration'.length));
    const url = new URL(metadata.issuer as string);
    expect(url.protocol).toBe('https:');
    expect(url.search + url.hash + url.username + url.password).toBe('');
  });

  it('metadata types: every *_supported a list of strings, every flag a boolean (ValidateServerMetadataAgainstSchema); no unknown keys (CheckForUnexpectedParametersInServerMetadata)', () => {
    for (const [key, value] of Object.entries(metadata)) {
      if (
        key.endsWith('_supported') &&
        !key.endsWith('parameter_supported') &&
        !key.startsWith('backchannel_logout') &&
        !key.startsWith('frontchannel_logout') &&
        key !== 'authorization_response_iss_parameter_supported'
      ) {
        expect(Array.isArray(value) && value.every((v) => typeof v === 'string'), key).toBe(true);
      }
      if (key.endsWith('parameter_supported') || key.startsWith('require_') || key.endsWith('logout_supported') || key.endsWith('logout_session_supported')) {
        expect(typeof value, key).toBe('boolean');
      }
    }
    expect(Object.keys(metadata).filter((k) => !knownMetadata.has(k))).toStrictEqual([]);
  });

  it('required metadata (CheckRequiredOidcDiscoveryMetadataSequence): endpoints, code, public subjects, RS256, openid', () => {
    expect(httpsUrl(metadata.authorization_endpoint)).toBe(true);
    expect(httpsUrl(metadata.token_endpoint)).toBe(true);
    expect(httpsUrl(metadata.jwks_uri)).toBe(true);
    expect(metadata.response_types_supported).toContain('code');
    expect(metadata.subject_types_supported).toContain('public');
    expect(metadata.id_token_signing_alg_values_supported).toContain('RS256');
    expect(metadata.scopes_supported).toContain('openid');
  });

  it('optional metadata is right where present: userinfo and registration https, request objects allow RS256, claims_supported a list, grant types, PKCE', () => {
    expect(httpsUrl(metadata.userinfo_endpoint)).toBe(true); // CheckDiscEndpointUserinfoEndpoint (absent: WARNING)
    expect(httpsUrl(metadata.registration_endpoint)).toBe(true); // CheckDiscEndpointRegistrationEndpoint
    expect(metadata.request_object_signing_alg_values_supported).toContain('RS256'); // …IncludesRS256 (WARNING)
    expect(metadata.claims_parameter_supported).toBe(true); // CheckDiscEndpointClaimsParameterSupported (INFO)
    expect(metadata.request_parameter_supported).toBe(true); // CheckDiscEndpointRequestParameterSupported (INFO)
    expect(Array.isArray(metadata.claims_supported)).toBe(true); // OIDCCCheckDiscEndpointClaimsSupported (WARNING)
    expect((metadata.grant_types_supported as string[]).length).toBeGreaterThan(0); // OIDCCCheckDiscEndpointGrantTypesSupported
    expect(metadata.code_challenge_methods_supported).toContain('S256'); // EnsureServerConfigurationCodeChallengeMethodsSupportedIsAnArray
  });

  it('scope tokens and locale tags are well formed, locales in canonical case (CheckDiscEndpointScopesSupportedSyntax, CheckDiscEndpointLocalesSyntax, …CanonicalCasing)', () => {
    for (const scope of metadata.scopes_supported as string[]) expect(scope).toMatch(/^[\x21\x23-\x5b\x5d-\x7e]+$/);
    const locales = metadata.ui_locales_supported as string[];
    expect(locales).toEqual(expect.arrayContaining(['en', 'fr']));
    for (const tag of locales) expect(Intl.getCanonicalLocales(tag)[0]).toBe(tag);
    expect(metadata.claims_locales_supported).toBeUndefined();
  });

  it('every *_endpoint is an https URL (CheckDiscEndpointAllEndpointsAreHttps)', () => {
    const endpoints = Object.entries(metadata).filter(([key]) => key.endsWith('_endpoint'));
    expect(endpoints.length).toBeGreaterThanOrEqual(9);
    for (const [key, value] of endpoints) expect(httpsUrl(value), key).toBe(true);
  });

  it('the discovery document claims what the server does: every listed endpoint answers', async () => {
    for (const key of ['authorization_endpoint', 'userinfo_endpoint', 'jwks_uri', 'end_session_endpoint']) {
      const res = await opFetch(op, metadata[key] as string);
      expect(res.status, key).toBeLessThan(500);
      expect(res.status, key).not.toBe(404);
    }
  });
});

describe('the JWKS (FetchServerKeys, ValidateJwksSequence, CheckForKeyIdInServerJWKs, CheckDistinctKeyIdValueInServerJWKs)', () => {
  it('public signing keys only, each with a unique kid, use=sig, an alg, unpadded base64url members, and usable', async () => {
    const res = await opFetch(op, metadata.jwks_uri as string);
    expect(res.status).toBe(200);
    const jwks = (await res.json()) as { keys: Record<string, unknown>[] };
    expect(Array.isArray(jwks.keys) && jwks.keys.length > 0).toBe(true);
    const kids = jwks.keys.map((k) => k.kid);
    expect(new Set(kids).size).toBe(kids.length);
    for (const key of jwks.keys) {
      expect(typeof key.kid === 'string' && key.kid !== '').toBe(true);
      expect(key.use).toBe('sig');
      expect(typeof key.alg).toBe('string');
      expect(key.kty).not.toBe('oct');
      for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k']) expect(key[secret], `${String(key.kid)} ${secret}`).toBeUndefined();
      const members = key.kty === 'RSA' ? ['n', 'e'] : key.kty === 'EC' ? ['crv', 'x', 'y'] : ['crv', 'x'];
      for (const member of members) expect(key[member]).toBeDefined();
      for (const member of members.filter((m) => m !== 'crv')) expect(key[member]).toMatch(/^[A-Za-z0-9_-]+$/);
      // ParseUsableJwksKeys: a real public key.
      expect(createPublicKey({ key: key as never, format: 'jwk' }).type).toBe('public');
    }
    // An RS256 key for id_tokens.
    expect(jwks.keys.some((k) => k.kty === 'RSA' && k.alg === 'RS256')).toBe(true);
  });

  it('after a key rotation both keys are published with distinct kids, and new id_tokens name the new one', async () => {
    const before = await op.t.app.services.signer.activeKid();
    await rotateSigningKeysNow(op.t.config, op.t.store, () => op.t.app.services.secretBox, op.now());
    op.t.clock.advance(30); // the server notices a rotation (by any instance or `latchkey keys rotate`) within seconds
    const jwks = (await (await opFetch(op, metadata.jwks_uri as string)).json()) as { keys: { kid: string; kty: string }[] };
    expect(jwks.keys.map((k) => k.kid)).toContain(before);
    expect(new Set(jwks.keys.map((k) => k.kid)).size).toBe(jwks.keys.length);
    const { tokens } = await codeFlow(op, new Tester(op));
    const kid = decodeProtectedHeader(tokens.idToken).kid;
    expect(kid).not.toBe(before);
    expect(jwks.keys.map((k) => k.kid)).toContain(kid);
  });
});
