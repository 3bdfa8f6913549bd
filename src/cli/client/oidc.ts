/**
 * The protocol side of the client commands, through openid-client (OpenID Certified): discovery
 * from the issuer, with id_token signatures checked against the JWKS (non-repudiation checks) and
 * plain http allowed, since a local issuer (http://localhost:3000) is the common first run.
 */
import * as oidc from 'openid-client';
import { CommandError, exitCodes } from '../command.js';

export { oidc };

export async function discover(issuer: string, clientId: string): Promise<oidc.Configuration> {
  const execute = [oidc.enableNonRepudiationChecks];
  if (issuer.startsWith('http:')) execute.push(oidc.allowInsecureRequests);
  try {
    return await oidc.discovery(new URL(issuer), clientId, undefined, oidc.None(), { execute, timeout: 15 });
  } catch (err) {
    throw new CommandError(`cannot reach the identity provider at ${issuer}: ${describe(err)}`, exitCodes.failure);
  }
}

/** One readable sentence for an error from openid-client or fetch. */
export function describe(err: unknown): string {
  const e = err as { error?: string; error_description?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e.error) return e.error_description ? `${e.error}: ${e.error_description}` : e.error;
  if (e.cause?.code === 'ECONNREFUSED') return 'connection refused';
  return e.cause?.message ?? e.message ?? String(err);
}

/** The OAuth error code of a refused request, if that is what happened. */
export function oauthErrorCode(err: unknown): string | undefined {
  return (err as { error?: string }).error;
}
