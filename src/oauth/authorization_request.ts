/**
 * Validation of an authorization request (RFC 6749 §4.1.1, §4.1.2.1; OIDC Core §3.1.2.1;
 * RFC 7636; RFC 9700 §2.1.1). Until the client and its redirect_uri are both verified, every
 * problem is shown on an error page and never redirected (RFC 6749 §4.1.2.1, RFC 9700 §4.1);
 * after that, problems go back to the client as error redirects carrying `state` — unless the
 * request's state cannot be echoed (repeated, too long, not VSCHAR), which is shown on a page too.
 *
 * A request object in `request` (OIDC Core §6) is opened once the client is known, and its
 * members replace the query's; its redirect_uri is then the one verified. `request_uri` other
 * than a pushed request's (RFC 9126) is `request_uri_not_supported`. The OIDC parameters that
 * shape the pages — display, ui_locales, login_hint — are kept for them; claims_locales is
 * accepted (this server holds no claims in several languages); `claims` (Core §5.5) is parsed.
 * `resource` (RFC 8707 §2) names the token's target as `audience` does (oauth/audience.ts).
 */
import { requestedAcrValues } from '../mfa/policy.js';
import { acrValuesSupported } from '../mfa/amr.js';
import { OAuthError } from '../errors.js';
import type { Config } from '../config.js';
import type { AuthorizationRequest, ClientRecord, PromptValue, Store } from '../store/store.js';
import { hasSeveralResources, maxTargetLength, requestedTarget, resolveAudience, severalResources } from './audience.js';
import { parseClaimsParameter, type ClaimsParameter } from './claims_request.js';
import { openRequestObject, type RequestObjectContext } from './request_object.js';
import { isValidCodeChallenge } from './pkce.js';
import { redirectUriAllowed } from './redirect.js';
import { formPostable } from './form_post.js';
import { grantableScope, parseScope } from './scope.js';

export type ParsedAuthorizationRequest =
  | { kind: 'invalid_page'; message: string }
  | { kind: 'invalid_redirect'; redirectUri: string; state: string | undefined; responseMode: 'form_post' | undefined; error: OAuthError }
  | {
      kind: 'valid';
      client: ClientRecord;
      request: AuthorizationRequest;
      maxAge: number | undefined;
      /** The person an id_token_hint or a claims sub value names. */
      expectedSubject: string | undefined;
      /** The claims sub value: only that person may answer (OIDC Core §5.5.1). */
      requiredSubject: string | undefined;
    };

/**
 * Longest values accepted. The request travels sealed in the browser's URLs until a person acts
 * (oauth/interaction.ts), so these bound its size; they are generous for real clients (a state is
 * typically 32-200 characters, a nonce 16-64).
 */
export const maxStateLength = 1024;
export const maxNonceLength = 256;

/**
 * Checks an id_token_hint: the `sub` of an id_token this server issued to the client (signature,
 * issuer, audience; an expired one is fine, OIDC Core §3.1.2.1), or undefined when it is not one.
 */
export type IdTokenHintCheck = (hint: string, clientId: string) => Promise<string | undefined>;

export interface AuthorizationRequestOptions {
  checkIdTokenHint?: IdTokenHintCheck;
  /** How to open request objects (OIDC Core §6): the server's issuer, clock and secret box. */
  requestObjects: RequestObjectContext;
}

/** RFC 6749 Appendix A.5: state is VSCHAR (printable ASCII); anything else is not echoed back. */
function echoableState(value: unknown): string | undefined {
  return typeof value === 'string' && value.length <= maxStateLength && /^[\x20-\x7e]*$/.test(value) ? value : undefined;
}

/**
 * RFC 6749 §4.1.2.1: an error response MUST carry the state "exactly as received" when the request
 * had one. A state that cannot be echoed cannot be answered that way, and an error redirect
 * without it is one the client cannot tie to its request (§10.12), so such a request is answered
 * on a page, like one whose redirect_uri is not verified.
 */
const malformedStatePage = { kind: 'invalid_page', message: 'The request’s state is malformed.' } as const;

/** Whether a request sent a state (repeated counts) that echoableState refuses. */
const stateMalformed = (value: unknown) => value !== undefined && echoableState(value) === undefined;

/** Printable ASCII of bounded length: the shape of the page-shaping parameters. */
const printable = (value: string, max: number) => value.length <= max && /^[\x20-\x7e]*$/.test(value);

const promptValues: readonly string[] = ['none', 'login', 'consent', 'select_account'];

/** Marks a parameter sent more than once (a symbol, so no real value can be mistaken for it). */
const repeated = Symbol('repeated');

function single(query: Record<string, unknown>, name: string): string | undefined | typeof repeated {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') return repeated;
  return value;
}

/**
 * Opens a request object in `request` and merges it over the query (OIDC Core §6.3.3). A broken
 * object is answered at the query's redirect_uri when that one is registered, else on a page.
 */
async function withRequestObject(
  q: Record<string, unknown>,
  client: ClientRecord,
  context: RequestObjectContext,
): Promise<{ kind: 'merged'; parameters: Record<string, unknown> } | Exclude<ParsedAuthorizationRequest, { kind: 'valid' }>> {
  const queryRedirect = single(q, 'redirect_uri');
  const fail = (error: OAuthError): Exclude<ParsedAuthorizationRequest, { kind: 'valid' }> => {
    if (typeof queryRedirect === 'string' && queryRedirect.length <= 2048 && redirectUriAllowed(queryRedirect, client.redirectUris)) {
      if (stateMalformed(q.state)) return malformedStatePage;
      const responseMode = single(q, 'response_mode') === 'form_post' && formPostable(queryRedirect) ? ('form_post' as const) : undefined;
      return { kind: 'invalid_redirect', redirectUri: queryRedirect, state: echoableState(single(q, 'state')), responseMode, error };
    }
    return { kind: 'invalid_page', message: 'The request object this application sent is not valid.' };
  };
  const jwt = single(q, 'request');
  if (jwt === repeated || jwt === undefined) return fail(new OAuthError('invalid_request', 'A parameter is repeated.'));
  if (q.request_uri !== undefined) return fail(new OAuthError('invalid_request', 'request and request_uri cannot both be sent.'));
  let object: Record<string, string>;
  try {
    object = await openRequestObject(context, client, jwt);
  } catch (err) {
    if (err instanceof OAuthError) return fail(err);
    throw err;
  }
  // OAuth requires response_type in the query; Core §6.1: when the object has it too, they agree.
  const queryResponseType = single(q, 'response_type');
  if (object.response_type !== undefined && queryResponseType !== undefined && queryResponseType !== object.response_type) {
    return fail(new OAuthError('invalid_request_object', 'The request object is invalid.', { detail: 'response_type differs from the query' }));
  }
  const { request: _request, ...rest } = q;
  return { kind: 'merged', parameters: { ...rest, ...object } };
}

export async function parseAuthorizationRequest(
  store: Store,
  config: Config,
  query: unknown,
  options: AuthorizationRequestOptions,
): Promise<ParsedAuthorizationRequest> {
  const checkIdTokenHint = options.checkIdTokenHint ?? (async () => undefined);
  let q = (query && typeof query === 'object' ? query : {}) as Record<string, unknown>;

  // 1. The client and its redirect_uri: nothing is sent anywhere before both are verified.
  const clientId = single(q, 'client_id');
  if (clientId === undefined || clientId === '') return { kind: 'invalid_page', message: 'The request names no application (client_id is missing).' };
  if (clientId === repeated || clientId.length > 256) return { kind: 'invalid_page', message: 'The request’s client_id is malformed.' };
  const client = await store.findClient(clientId);
  if (!client) return { kind: 'invalid_page', message: 'The application that sent you here is not registered.' };
  if (client.disabled) return { kind: 'invalid_page', message: 'The application that sent you here has been disabled by the administrator.' };
  if (q.request !== undefined) {
    const merged = await withRequestObject(q, client, options.requestObjects);
    if (merged.kind !== 'merged') return merged;
    q = merged.parameters;
  }
  const redirectUri = single(q, 'redirect_uri');
  if (redirectUri === undefined || redirectUri === '') return { kind: 'invalid_page', message: 'The request has no redirect_uri.' };
  if (redirectUri === repeated || redirectUri.length > 2048 || !redirectUriAllowed(redirectUri, client.redirectUris)) {
    return { kind: 'invalid_page', message: 'The address this application asked to return to is not registered for it.' };
  }

  // 2. A state the answer could not carry: nothing goes to the client (checked before any error
  // that would be redirected).
  if (stateMalformed(q.state)) return malformedStatePage;

  // 3. Everything else is answered to the client, with the state as received.
  const rawState = single(q, 'state');
  const state = echoableState(rawState);
  // Errors go back the way the client asked for answers, once that is known to be possible.
  const rawMode = single(q, 'response_mode');
  const responseMode = rawMode === 'form_post' && formPostable(redirectUri) ? ('form_post' as const) : undefined;
  const fail = (error: OAuthError): ParsedAuthorizationRequest => ({ kind: 'invalid_redirect', redirectUri, state, responseMode, error });
  const invalid = (description: string) => fail(new OAuthError('invalid_request', description));

  // RFC 8707 §2 allows several resources; answered as such rather than as any repeated parameter.
  if (hasSeveralResources(q)) return fail(severalResources());
  for (const [name, value] of Object.entries(q)) {
    if (typeof value !== 'string')
      return fail(new OAuthError('invalid_request', 'A parameter is repeated.', { detail: `repeated parameter ${name.slice(0, 64)}` }));
  }
  const p = q as Record<string, string | undefined>;

  // Pushed requests' request_uri were redeemed before; no other is fetched (no requests from here to addresses clients name).
  if (p.request_uri !== undefined) return fail(new OAuthError('request_uri_not_supported', 'request_uri is not supported.'));
  if (p.registration !== undefined) return fail(new OAuthError('registration_not_supported', 'The registration parameter is not supported.'));
  if (p.response_type === undefined || p.response_type === '') return invalid('response_type is required.');
  if (p.response_type !== 'code') return fail(new OAuthError('unsupported_response_type', 'Only response_type=code is supported.'));
  if (p.response_mode !== undefined && p.response_mode !== 'query' && p.response_mode !== 'form_post')
    return invalid('response_mode must be query or form_post.');
  if (p.response_mode === 'form_post' && responseMode === undefined) return invalid('response_mode=form_post needs an http or https redirect_uri.');
  // RFC 9449 §10: the code will be redeemable only with a DPoP proof by the key of this thumbprint.
  if (p.dpop_jkt !== undefined && !/^[A-Za-z0-9_-]{43}$/.test(p.dpop_jkt)) return invalid('dpop_jkt must be a SHA-256 JWK thumbprint.');
  if (state === undefined || state === '') return invalid('state is required.');
  if (!client.grantTypes.includes('authorization_code')) {
    return fail(new OAuthError('unauthorized_client', 'This client is not allowed to use the authorization_code grant.'));
  }

  // OIDC Core §5.5: the claims asked for by name, a person named by sub, an authentication level.
  let claims: ClaimsParameter = { requested: undefined, subject: undefined, acr: undefined };
  if (p.claims !== undefined) {
    try {
      claims = parseClaimsParameter(p.claims);
    } catch (err) {
      if (err instanceof OAuthError) return fail(err);
      throw err;
    }
  }

  let scope: string;
  let audience: string;
  let acrValues: string;
  try {
    if ((p.acr_values ?? '').length > 1024) return invalid('acr_values is too long.');
    // An acr asked for in `claims` (Core §5.5.1.1) takes the place of acr_values; an essential
    // one that names no level this server has cannot be met.
    const acrAsked = claims.acr === undefined ? p.acr_values : claims.acr.values.join(' ');
    if (claims.acr?.essential && !claims.acr.values.some((v) => (acrValuesSupported as readonly string[]).includes(v))) {
      throw new OAuthError('unmet_authentication_requirements', 'The requested authentication level cannot be met.');
    }
    acrValues = requestedAcrValues(config, acrAsked);
    if ((p.scope ?? '').length > 1024) return invalid('The scope is too long.');
    if ((p.audience ?? '').length > maxTargetLength) return invalid('The audience is too long.');
    if ((p.resource ?? '').length > maxTargetLength) return invalid('The resource is too long.');
    const target = await resolveAudience(store, config, requestedTarget(p));
    audience = target.audience;
    scope = grantableScope(parseScope(p.scope, target.scopes), client).join(' ');
  } catch (err) {
    if (err instanceof OAuthError) return fail(err);
    throw err;
  }

  const challenge = p.code_challenge;
  const method = p.code_challenge_method;
  if (method !== undefined && method !== 'S256') return invalid('code_challenge_method must be S256.');
  if (challenge !== undefined) {
    if (method === undefined) return invalid('code_challenge_method=S256 is required with a code_challenge.');
    if (!isValidCodeChallenge(challenge)) return invalid('The code_challenge is malformed.');
  } else if (method !== undefined) {
    return invalid('code_challenge_method was sent without a code_challenge.');
  } else if (client.requirePkce && client.secretHash === undefined) {
    return invalid('PKCE is required: send code_challenge with code_challenge_method=S256.');
  }

  // Control characters have no place in a nonce (and PostgreSQL text cannot hold U+0000).
  if (p.nonce !== undefined && (p.nonce === '' || p.nonce.length > maxNonceLength || /[\u0000-\u001f\u007f]/.test(p.nonce)))
    return invalid('The nonce is malformed.');

  const prompt = (p.prompt ?? '').split(' ').filter((v) => v !== '');
  if (prompt.some((v) => !promptValues.includes(v))) return invalid('The prompt value is not supported.');
  if (prompt.includes('none') && prompt.length > 1) return invalid('prompt=none cannot be combined with other values.');

  let maxAge: number | undefined;
  if (p.max_age !== undefined) {
    if (!/^\d{1,9}$/.test(p.max_age)) return invalid('max_age must be a whole number of seconds.');
    maxAge = Number(p.max_age);
  }

  // A hint that is not an id_token of ours for this client is an error, not something to ignore
  // (OIDC Core §3.1.2.1): with prompt=none the client relies on it to name the person.
  let expectedSubject: string | undefined;
  if (p.id_token_hint !== undefined) {
    expectedSubject = p.id_token_hint.length <= 8192 ? await checkIdTokenHint(p.id_token_hint, client.clientId) : undefined;
    if (expectedSubject === undefined) return invalid('The id_token_hint is not a valid ID token of this server for this client.');
  }
  // A sub asked for with a value (Core §5.5.1) names the person as a hint does, and more: no one
  // else may answer.
  if (claims.subject !== undefined) {
    if (expectedSubject !== undefined && expectedSubject !== claims.subject)
      return invalid('The claims parameter and the id_token_hint name different people.');
    expectedSubject = claims.subject;
  }

  // Parameters that shape the pages (Core §3.1.2.1): bounded, kept only when well-formed.
  if (p.display !== undefined && !printable(p.display, 32)) return invalid('display is malformed.');
  if (p.ui_locales !== undefined && !printable(p.ui_locales, 256)) return invalid('ui_locales is malformed.');
  if (p.claims_locales !== undefined && !printable(p.claims_locales, 256)) return invalid('claims_locales is malformed.');
  if (p.login_hint !== undefined && (p.login_hint.length > 256 || /[\u0000-\u001f\u007f]/.test(p.login_hint))) return invalid('login_hint is malformed.');
  const uiLocales = p.ui_locales?.trim();
  const loginHint = p.login_hint?.trim();

  return {
    kind: 'valid',
    client,
    maxAge,
    expectedSubject,
    requiredSubject: claims.subject,
    request: {
      clientId: client.clientId,
      redirectUri,
      scope,
      audience,
      state,
      nonce: p.nonce,
      codeChallenge: challenge,
      prompt: prompt.filter((v): v is PromptValue => v === 'none' || v === 'login' || v === 'consent'),
      ...(acrValues === '' ? {} : { acrValues }),
      ...(responseMode === undefined ? {} : { responseMode }),
      ...(p.dpop_jkt === undefined ? {} : { dpopJkt: p.dpop_jkt }),
      ...(claims.requested === undefined ? {} : { claims: claims.requested }),
      ...(uiLocales ? { uiLocales } : {}),
      ...(loginHint ? { loginHint } : {}),
    },
  };
}
