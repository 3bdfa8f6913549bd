/**
 * POST /oauth/device/code — the device authorization request (RFC 8628 §3.1, §3.2).
 * Creates a pending grant holding only digests of the device code and user code, and remembers
 * the requester's address and user agent to show the person who approves (RFC 8628 §5.4).
 */
import { audit } from '../audit/audit_events.js';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { epochSeconds } from '../clock.js';
import { orderedSecret, orderedSecretDigest } from '../crypto/ordered_secrets.js';
import { randomId, secretPrefix } from '../crypto/secrets.js';
import { authenticateClient, clientAuthContext, readClientCredentials, requireGrantType } from '../oauth/client_auth.js';
import { maxTargetLength, refuseSeveralResources, requestedTarget, resolveAudience } from '../oauth/audience.js';
import { grantableScope, parseScope } from '../oauth/scope.js';
import { formatUserCode, generateCanonicalUserCode, userCodeDigest } from '../oauth/user_code.js';
import { DuplicateError } from '../store/store.js';
import { tooManyRequests } from '../errors.js';
import { rateLimitKey } from '../limits/rate_limit.js';
import { parseFields } from '../http/form.js';
import { headerText } from '../http/header_text.js';
import { postOnly } from '../http/method_not_allowed.js';
import { requestedAcrValues } from '../mfa/policy.js';

const deviceAuthorizationParams = z.object({
  client_id: z.string().max(256).optional(),
  client_secret: z.string().max(512).optional(),
  client_assertion: z.string().max(8192).optional(),
  client_assertion_type: z.string().max(256).optional(),
  scope: z.string().max(1024).optional(),
  audience: z.string().max(maxTargetLength).optional(),
  /** RFC 8707 §2: the target as an absolute URI; the same as `audience` when both are sent. */
  resource: z.string().max(maxTargetLength).optional(),
  /** `urn:latchkey:mfa` asks for a second factor at the approval (voluntary values: others are ignored). */
  acr_values: z.string().max(1024).optional(),
});

export interface DeviceAuthorizationResponse {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

const maxCollisionRetries = 5;

export async function deviceAuthorizationRoutes(app: FastifyInstance): Promise<void> {
  postOnly(app, '/oauth/device/code');
  app.post('/oauth/device/code', async (request, reply) => {
    const { store, config, clock } = app.services;
    reply.header('cache-control', 'no-store');
    // RFC 8707 §2: several resources are answered as such (invalid_target), not as a repeated parameter.
    refuseSeveralResources(request.body);
    const params = parseFields(deviceAuthorizationParams, request.body);
    const client = await authenticateClient(
      clientAuthContext(request, app.services, '/oauth/device/code'),
      readClientCredentials(request.headers.authorization, params),
    );
    requireGrantType(client, 'device_code');
    const limited = await app.services.rateLimits.deviceAuthorization.hit(`${client.clientId}|${rateLimitKey(request.ip)}`);
    if (limited.limited) throw tooManyRequests(limited.retryAfter, 'Too many device authorization requests. Try again later.');
    const { audience, scopes: apiScopes } = await resolveAudience(store, config, requestedTarget(params));
    const scope = grantableScope(parseScope(params.scope, apiScopes), client).join(' ');
    const acrValues = requestedAcrValues(config, params.acr_values);

    const now = epochSeconds(clock);
    // Stored under a key that grows with time: one commit's device codes share an index page.
    const deviceCode = orderedSecret(secretPrefix.deviceCode, clock() * 1000);
    for (let attempt = 0; ; attempt++) {
      const canonicalUserCode = generateCanonicalUserCode();
      const userCode = formatUserCode(canonicalUserCode);
      try {
        await store.createDeviceGrant({
          id: randomId(),
          deviceCodeHash: orderedSecretDigest(deviceCode, secretPrefix.deviceCode),
          userCodeHash: userCodeDigest(app.services.userCodeKey, canonicalUserCode),
          clientId: client.clientId,
          scope,
          audience,
          status: 'pending',
          interval: config.deviceInterval,
          lastPolledAtMs: undefined,
          userId: undefined,
          authTime: undefined,
          amr: [],
          acrValues,
          requesterIp: request.ip,
          requesterUserAgent: headerText(request.headers['user-agent']) || 'unknown',
          createdAt: now,
          expiresAt: now + config.deviceCodeTtl,
          decidedAt: undefined,
          consumedAt: undefined,
          accessTokenJti: undefined,
          refreshFamilyId: undefined,
          issuedAt: undefined,
          recoveries: 0,
          dpopJkt: undefined,
        });
        const verificationUri = `${config.issuer}/activate`;
        const body: DeviceAuthorizationResponse = {
          device_code: deviceCode,
          user_code: userCode,
          verification_uri: verificationUri,
          verification_uri_complete: `${verificationUri}?user_code=${userCode}`,
          expires_in: config.deviceCodeTtl,
          interval: config.deviceInterval,
        };
        audit(request, 'device.authorization_requested', { clientId: client.clientId });
        app.services.metrics.deviceAuthorizations.inc({ outcome: 'requested' });
        return body;
      } catch (err) {
        // A user code that collides with a stored one is drawn again (about 1 in 2.5e10 per code).
        if (!(err instanceof DuplicateError) || attempt >= maxCollisionRetries) throw err;
      }
    }
  });
}
