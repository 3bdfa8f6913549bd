/**
 * The client a request names, read before anything is verified: what decides whether a browser
 * page may read the answer (CORS), never whether the request succeeds. That is safe because an
 * endpoint succeeds only for the client it verified, and that is the client named here: at the
 * token, revocation and device authorization endpoints the client authenticates as the one its
 * credentials name (readClientCredentials refuses a form client_id that differs from them), and
 * userinfo answers only a valid access token, whose `client_id` is then genuine (RFC 9068 §2.2).
 * A false name can only make an error answer readable to the named client's own origins.
 */
import { readClientCredentials } from './client_auth.js';

/** The string value of one field of a parsed form body; undefined when absent, repeated or not text. */
function field(body: unknown, name: string): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const value = (body as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
}

/** The client a token, revocation or device authorization request names: by its credentials, else its form's client_id. */
export function clientOfForm(authorization: string | undefined, body: unknown): string | undefined {
  const clientId = field(body, 'client_id');
  try {
    const credentials = readClientCredentials(authorization, {
      client_id: clientId,
      client_secret: field(body, 'client_secret'),
      client_assertion: field(body, 'client_assertion'),
      client_assertion_type: field(body, 'client_assertion_type'),
    });
    return credentials.clientId === '' ? undefined : credentials.clientId;
  } catch {
    // Credentials that contradict each other (two methods, a form client_id that is not theirs)
    // name no client, and the endpoint's refusal is read by nobody's page.
    return undefined;
  }
}

/**
 * The client an access token presented to userinfo was issued to (its `client_id`, or `azp`), from
 * the Authorization header (Bearer or DPoP, RFC 6750 §2.1, RFC 9449 §7.1) or a POST body's
 * access_token (RFC 6750 §2.2). Cookies play no part.
 */
export function clientOfAccessToken(authorization: string | undefined, body: unknown): string | undefined {
  const fromHeader =
    authorization !== undefined && /^(bearer|dpop) /i.test(authorization) ? authorization.slice(authorization.indexOf(' ') + 1).trim() : undefined;
  const token = fromHeader ?? field(body, 'access_token');
  const payload = token?.split('.')[1];
  if (payload === undefined || payload.length > 8192) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { client_id?: unknown; azp?: unknown };
    const clientId = typeof claims.client_id === 'string' ? claims.client_id : claims.azp;
    return typeof clientId === 'string' && clientId !== '' ? clientId : undefined;
  } catch {
    return undefined;
  }
}
