/**
 * The protocol side of the client commands, through openid-client (OpenID Certified): discovery
 * from the issuer, with id_token signatures checked against the JWKS (non-repudiation checks) and
 * plain http allowed, since a local issuer (http://localhost:3000) is the common first run.
 */
import * as oidc from 'openid-client';
import { CommandError, exitCodes } from '../command.js';
import { visible } from '../terminal_text.js';

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

/** Text from a server or a callback, made safe for a terminal (terminal_text.ts) and kept short. */
export function printable(text: string): string {
  return visible(text.slice(0, 300));
}

type Challenge = { scheme?: string; parameters?: Record<string, string> };
type ClientError = {
  error?: string;
  error_description?: string;
  message?: string;
  cause?: { code?: string; message?: string; error?: string; error_description?: string } | Challenge[];
};

/** The OAuth error of a refused request (a body, or a WWW-Authenticate challenge), if that is what happened. */
function oauthError(err: unknown): { code: string; description: string | undefined } | undefined {
  const e = err as ClientError;
  if (e.error) return { code: e.error, description: e.error_description };
  if (Array.isArray(e.cause)) {
    const parameters = e.cause[0]?.parameters;
    if (parameters?.error) return { code: parameters.error, description: parameters.error_description };
  }
  return undefined;
}

/** One readable sentence for an error from openid-client or fetch. */
export function describe(err: unknown): string {
  const refused = oauthError(err);
  if (refused) return printable(refused.description ? `${refused.code}: ${refused.description}` : refused.code);
  const e = err as ClientError;
  const cause = Array.isArray(e.cause) ? undefined : e.cause;
  if (cause?.code === 'ECONNREFUSED') return 'connection refused';
  return printable(cause?.message ?? e.message ?? String(err));
}

/** The OAuth error code of a refused request, if that is what happened. */
export function oauthErrorCode(err: unknown): string | undefined {
  return oauthError(err)?.code;
}
