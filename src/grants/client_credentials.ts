/**
 * grant_type=client_credentials (RFC 6749 §4.4): a machine acting for itself. Only confidential
 * clients (a secret or registered keys), and only for an API the operator granted it
 * (`clients grant`), with at most the scopes granted that the API still declares. The token's
 * `sub` is the client_id (RFC 9068 §2.2); there is no refresh token (RFC 6749 §4.4.3) and no
 * id_token: there is no person. The API is named by `audience` or `resource` (RFC 8707 §2), or
 * left out when the client was granted one API only.
 */
import { z } from 'zod';
import { isConfidential } from '../oauth/client_type.js';
import { epochSeconds } from '../clock.js';
import { randomId } from '../crypto/secrets.js';
import { OAuthError } from '../errors.js';
import { audit } from '../audit/audit_events.js';
import { isOidcScope, scopeTokenPattern } from '../oauth/scope.js';
import type { TokenResponse } from '../oauth/token_response.js';
import { requestedTarget } from '../oauth/audience.js';
import { targetFields } from './target.js';
import type { GrantHandler } from './types.js';

const params = z.object({
  scope: z.string().max(1024, 'scope is too long.').optional(),
  ...targetFields,
});

export const clientCredentialsGrant = {
  grantType: 'client_credentials',
  clientGrantType: 'client_credentials',
  params,
  async handle(context, { scope, ...target }) {
    const { services, client } = context;
    const { store, signer, config, clock } = services;
    if (!isConfidential(client)) throw new OAuthError('unauthorized_client', 'The client_credentials grant is for confidential clients only.');
    const audience = requestedTarget(target);

    const grants = await store.listClientGrants(client.clientId);
    let grant;
    if (audience === undefined) {
      // Without an audience the one API the client may use is meant; with several it must say which.
      if (grants.length !== 1 || grants[0] === undefined)
        throw new OAuthError('invalid_target', 'Name the API with the audience or resource parameter.', { detail: `${grants.length} grants` });
      grant = grants[0];
    } else {
      grant = grants.find((g) => g.api === audience);
      if (!grant)
        throw new OAuthError('invalid_target', 'This client may not request tokens for that API.', { detail: `no grant for ${audience.slice(0, 200)}` });
    }
    const api = await store.findApi(grant.api);
    if (!api) throw new OAuthError('invalid_target', 'This client may not request tokens for that API.', { detail: 'granted API removed' });
    const available = grant.scopes.filter((s) => api.scopes.includes(s));
    // A token that allows nothing is not issued (the API stopped declaring what was granted).
    if (available.length === 0) throw new OAuthError('invalid_scope', 'None of the scopes granted to this client can be issued.');

    let granted: string[];
    if (scope === undefined || scope.trim() === '') {
      granted = available;
    } else {
      const requested = [...new Set(scope.split(' ').filter((s) => s !== ''))];
      if (requested.some((s) => !scopeTokenPattern.test(s))) throw new OAuthError('invalid_scope', 'The scope contains characters that are not allowed.');
      if (requested.some(isOidcScope)) throw new OAuthError('invalid_scope', 'OpenID Connect scopes need a person; a machine client cannot ask for them.');
      const refused = requested.filter((s) => !available.includes(s));
      if (refused.length > 0) {
        throw new OAuthError('invalid_scope', 'A requested scope was not granted to this client.', {
          detail: `not granted: ${refused.join(' ').slice(0, 200)}`,
        });
      }
      granted = requested;
    }

    const now = epochSeconds(clock);
    const accessToken = await signer.signAccessToken({
      iss: config.issuer,
      // RFC 9068 §2.2: with no resource owner, the subject is the client itself.
      sub: client.clientId,
      aud: api.identifier,
      client_id: client.clientId,
      scope: granted.join(' '),
      iat: now,
      exp: now + config.accessTokenTtl,
      jti: randomId(),
      // RFC 9449 §6: bound to the key the request proved, if any.
      ...(context.dpopJkt === undefined ? {} : { cnf: { jkt: context.dpopJkt } }),
    });
    audit(context, 'token.issued', { grant: 'client_credentials', clientId: client.clientId, api: api.identifier, scope: granted.join(' ') });
    const response: TokenResponse = {
      access_token: accessToken,
      token_type: context.dpopJkt === undefined ? 'Bearer' : 'DPoP',
      expires_in: config.accessTokenTtl,
      scope: granted.join(' '),
    };
    return response;
  },
} satisfies GrantHandler<z.infer<typeof params>>;
