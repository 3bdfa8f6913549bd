/**
 * The protocol side of the client commands, through openid-client (OpenID Certified): discovery
 * from the issuer, with id_token signatures checked against the JWKS (non-repudiation checks) and
 * plain http allowed, since a local issuer (http://localhost:3000) is the common first run. Every
 * request goes out with latchkey's own User-Agent (user_agent.ts).
 */
import * as oidc from 'openid-client';
import { CommandError, exitCodes } from '../command.js';
import { explainClientError } from './client_errors.js';
import { fetchAsLatchkey } from './user_agent.js';

export { oidc };
export { printable } from './printable.js';

/** openid-client's requests, through fetchAsLatchkey (its options are fetch's own; only their TypeScript types differ). */
const customFetch: oidc.CustomFetch = (url, options) => fetchAsLatchkey(url, options as RequestInit);

export async function discover(issuer: string, clientId: string): Promise<oidc.Configuration> {
  const execute = [oidc.enableNonRepudiationChecks];
  if (issuer.startsWith('http:')) execute.push(oidc.allowInsecureRequests);
  try {
    // The custom fetch is kept by the configuration, so every later request carries it too.
    return await oidc.discovery(new URL(issuer), clientId, undefined, oidc.None(), { execute, timeout: 15, [oidc.customFetch]: customFetch });
  } catch (err) {
    throw new CommandError(explainClientError(err, { issuer, clientId }), exitCodes.failure);
  }
}
