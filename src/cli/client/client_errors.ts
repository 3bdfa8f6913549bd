/**
 * Every failure the sign-in commands can meet — from openid-client, from fetch, from the network
 * and TLS below it — turned into a sentence that says what happened in the person's terms and
 * what to do about it, naming the option to change. A library's own words ("server responded with
 * a challenge in the WWW-Authenticate HTTP Header") tell a person nothing they can act on.
 * Anything the server sent is made safe for the terminal before it is quoted.
 */
import { printable } from './printable.js';

/** What the CLI was doing, for the sentence. */
export interface ErrorSituation {
  /** The issuer it was talking to. */
  issuer: string;
  /** The client it signs in as. */
  clientId: string;
}

type Challenge = { scheme?: string; parameters?: Record<string, string> };

/** The fields of openid-client's, oauth4webapi's and undici's errors that are read here. */
interface LibraryError {
  name?: string;
  code?: string | number;
  message?: string;
  error?: string;
  error_description?: string;
  status?: number;
  cause?: unknown;
}

const asError = (value: unknown): LibraryError => (typeof value === 'object' && value !== null ? value : {});

/** The OAuth error of a refused request (a JSON body, RFC 6749 §5.2, or a WWW-Authenticate challenge, RFC 6750 §3). */
function oauthError(err: unknown): { code: string; description: string | undefined } | undefined {
  const e = asError(err);
  if (typeof e.error === 'string' && e.error !== '') return { code: e.error, description: e.error_description };
  if (e.code === 'OAUTH_WWW_AUTHENTICATE_CHALLENGE' && Array.isArray(e.cause)) {
    for (const challenge of e.cause as Challenge[]) {
      const code = challenge.parameters?.error;
      if (code) return { code, description: challenge.parameters?.error_description };
    }
    // A bare Basic challenge on a 401 is the answer to a failed client authentication (RFC 6749
    // §5.2: 401 with WWW-Authenticate naming the scheme the client should have used).
    const basic = (e.cause as Challenge[]).some((challenge) => challenge.scheme?.toLowerCase() === 'basic');
    if (e.status === 401 && basic) return { code: 'invalid_client', description: undefined };
  }
  return undefined;
}

/** The OAuth error code of a refused request, if that is what happened. */
export function oauthErrorCode(err: unknown): string | undefined {
  return oauthError(err)?.code;
}

/** The error codes of Node's network and TLS layers (undici puts them on `cause`). */
function systemCode(err: unknown): string | undefined {
  for (let e = asError(err), depth = 0; depth < 4; e = asError(e.cause), depth++) {
    if (typeof e.code === 'string' && !e.code.startsWith('OAUTH_') && e.code !== 'UND_ERR_SOCKET') return e.code;
    if (e.cause === undefined) break;
  }
  return undefined;
}

/** Whether the request was given up on because it took too long. */
function timedOut(err: unknown): boolean {
  for (let e = asError(err), depth = 0; depth < 4; e = asError(e.cause), depth++) {
    if (e.code === 'OAUTH_TIMEOUT' || e.name === 'TimeoutError' || e.code === 'UND_ERR_CONNECT_TIMEOUT' || e.code === 'ETIMEDOUT') return true;
    if (e.cause === undefined) break;
  }
  return false;
}

const untrustedCertificate = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
]);

function origin(issuer: string): string {
  try {
    return new URL(issuer).origin;
  } catch {
    return issuer;
  }
}

function host(issuer: string): string {
  try {
    return new URL(issuer).hostname;
  } catch {
    return issuer;
  }
}

/** Network and TLS failures: nothing was answered. */
function transportProblem(err: unknown, situation: ErrorSituation): string | undefined {
  const at = origin(situation.issuer);
  if (timedOut(err)) return `${at} did not answer in time: check that the server is running and reachable from here, and --issuer`;
  const code = systemCode(err);
  if (code === undefined) {
    // fetch refuses some ports outright ("bad port"), before any connection.
    const cause = asError(asError(err).cause);
    if (asError(err).message === 'fetch failed' && cause.message === 'bad port') return `the port of ${at} is one no HTTP client may use: check --issuer`;
    return undefined;
  }
  if (code === 'ECONNREFUSED') return `nothing is listening at ${at} (connection refused): is the server running, and is --issuer right?`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME' || code === 'EAI_FAIL') {
    return `the host name ${printable(host(situation.issuer))} cannot be found (DNS): check --issuer, and this machine's network`;
  }
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH' || code === 'EHOSTDOWN' || code === 'ENETDOWN') {
    return `${at} cannot be reached from this machine (${code}): check the network (VPN, proxy) and --issuer`;
  }
  if (code === 'ECONNRESET' || code === 'EPIPE') return `${at} closed the connection: check --issuer (http or https?) and that the server is healthy`;
  if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'ERR_SSL_PACKET_LENGTH_TOO_LONG' || code === 'EPROTO') {
    return `${at} does not speak HTTPS on that port: check --issuer (http:// rather than https://, or another port)`;
  }
  if (untrustedCertificate.has(code)) {
    return `the TLS certificate of ${at} is not trusted by this machine (${code}): if your organisation signs its own certificates, point NODE_EXTRA_CA_CERTS at its CA certificate file`;
  }
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') {
    return `the TLS certificate of ${at} is ${code === 'CERT_HAS_EXPIRED' ? 'expired' : 'not valid yet'}: tell the server's operator (or check this machine's clock)`;
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return `the TLS certificate of ${at} is for another host name: check --issuer (the name the server is known by)`;
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_') || code.includes('CERT'))
    return `the TLS connection to ${at} failed (${code}): check --issuer`;
  return undefined;
}

/** The answer did not come from an OpenID provider at that address. */
function answerProblem(err: unknown, situation: ErrorSituation): string | undefined {
  const e = asError(err);
  const response = e.cause instanceof Response ? e.cause : undefined;
  const discovery = `${situation.issuer}/.well-known/openid-configuration`;
  switch (e.code) {
    case 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED': {
      // Discovery found a provider whose issuer is another URL (RFC 8414 §3.3, OIDC Discovery §4.3):
      // often localhost against 127.0.0.1, or a missing or extra path.
      const cause = asError(e.cause) as { attribute?: string; body?: { issuer?: unknown } };
      const real = cause.body?.issuer;
      if (cause.attribute === 'issuer' && typeof real === 'string') {
        return `the server at ${printable(situation.issuer)} says its issuer is ${printable(real)}; use --issuer ${printable(real)}`;
      }
      return undefined;
    }
    case 'OAUTH_RESPONSE_IS_NOT_CONFORM':
      if (response?.status === 404) {
        return `${printable(situation.issuer)} is not the address of an OpenID provider (no ${printable(discovery)}, HTTP 404): check --issuer`;
      }
      if (response && response.status >= 500)
        return `the server at ${printable(situation.issuer)} is failing (HTTP ${response.status}): try again later, or tell its operator`;
      return response
        ? `the server at ${printable(situation.issuer)} answered with HTTP ${response.status}, not what an OpenID provider answers: check --issuer`
        : undefined;
    case 'OAUTH_RESPONSE_IS_NOT_JSON': {
      const type = response?.headers.get('content-type')?.split(';')[0];
      return `the server at ${printable(situation.issuer)} answered with ${type ? printable(type) : 'something'} instead of JSON: is --issuer the address of the identity provider (not of a web page or a proxy's login)?`;
    }
    case 'OAUTH_PARSE_ERROR':
      return `the server at ${printable(situation.issuer)} answered with malformed JSON: is --issuer the address of the identity provider?`;
    case 'OAUTH_JWT_TIMESTAMP_CHECK_FAILED':
      return `the identity provider's token was not valid at this machine's time: check this machine's clock`;
    default:
      return undefined;
  }
}

/** What an OAuth refusal means here, and what to change. */
function refusal(code: string, description: string | undefined, situation: ErrorSituation): string {
  const said = description ? ` (${printable(description)})` : '';
  switch (code) {
    case 'invalid_client':
      return `the client "${printable(situation.clientId)}" is not known to ${printable(situation.issuer)}, or may not sign in this way${said}: check --client-id (the built-in one is latchkey-cli)`;
    case 'unauthorized_client':
      return `the client "${printable(situation.clientId)}" may not use this kind of sign-in at ${printable(situation.issuer)}${said}: check --client-id, or ask the server's operator`;
    case 'invalid_scope':
      return `the identity provider refused the scope${said}: check --scope`;
    case 'invalid_target':
      return `the identity provider knows no such API${said}: check --audience`;
    default:
      return `${printable(code)}${description ? `: ${printable(description)}` : ''}`;
  }
}

/** One sentence for an error met while talking to the identity provider. */
export function explainClientError(err: unknown, situation: ErrorSituation): string {
  const refused = oauthError(err);
  if (refused) return refusal(refused.code, refused.description, situation);
  const explained = transportProblem(err, situation) ?? answerProblem(err, situation);
  if (explained) return explained;
  const e = asError(err);
  const cause = asError(e.cause);
  if (e.code === 'OAUTH_WWW_AUTHENTICATE_CHALLENGE') return `the identity provider refused the request (HTTP ${e.status ?? '?'})`;
  return printable(typeof cause.message === 'string' && e.message === 'fetch failed' ? cause.message : (e.message ?? String(err)));
}
