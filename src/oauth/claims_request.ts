/**
 * The OIDC `claims` request parameter (Core §5.5): a JSON object whose `userinfo` and `id_token`
 * members name the claims wanted there, each with null or { essential, value, values }. Members
 * this server does not understand are ignored (§5.5: "…MUST ignore…"), and so are claims it does
 * not hold, which it may simply not return. Two requests are honoured beyond releasing claims:
 * a `sub` with a value names the person who must be signed in (§5.5.1), and `acr` asks for an
 * authentication level (§5.5.1.1), refused when essential and none of its values can be met.
 */
import { OAuthError } from '../errors.js';
import type { RequestedClaims } from '../store/store.js';
import { isPersonClaim } from './claims.js';

/** Far above what a real request names (a few dozen claims); it travels sealed in the browser's URLs. */
export const maxClaimsParameterLength = 4096;

export interface ClaimsParameter {
  /** The claims to release, by name (only those the server holds). */
  requested: RequestedClaims | undefined;
  /** `sub` asked for with a value: only this person may answer. */
  subject: string | undefined;
  /** `acr` asked for with value(s), in order of preference; `essential` when it must be met. */
  acr: { values: string[]; essential: boolean } | undefined;
}

const malformed = (detail: string) => new OAuthError('invalid_request', 'The claims parameter is malformed.', { detail });

interface ClaimRequest {
  essential?: unknown;
  value?: unknown;
  values?: unknown;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** One target (userinfo or id_token): each member null or an object with well-typed members. */
function readTarget(target: unknown, name: string): Map<string, ClaimRequest | null> {
  const claims = new Map<string, ClaimRequest | null>();
  if (target === undefined || target === null) return claims;
  if (!isObject(target)) throw malformed(`${name} is not an object`);
  for (const [claim, request] of Object.entries(target)) {
    if (request !== null && !isObject(request)) throw malformed(`${name}.${claim.slice(0, 64)} is neither null nor an object`);
    if (request) {
      if (request.essential !== undefined && typeof request.essential !== 'boolean')
        throw malformed(`${name}.${claim.slice(0, 64)}.essential is not a boolean`);
      if (request.values !== undefined && !Array.isArray(request.values)) throw malformed(`${name}.${claim.slice(0, 64)}.values is not an array`);
    }
    claims.set(claim, request);
  }
  return claims;
}

/** The string values a claim request names (value, then values), if any. */
function namedValues(request: ClaimRequest | null | undefined): string[] {
  if (!request) return [];
  const listed: unknown[] = Array.isArray(request.values) ? request.values : [];
  const values = [request.value, ...listed];
  return values.filter((v): v is string => typeof v === 'string');
}

/**
 * Parses the parameter: the JSON text of a query or form, or the object itself when it came
 * inside a request object (§6.1). Malformed → invalid_request.
 */
export function parseClaimsParameter(raw: unknown): ClaimsParameter {
  let value: unknown = raw;
  if (typeof raw === 'string') {
    if (raw.length > maxClaimsParameterLength) throw malformed('longer than allowed');
    try {
      value = JSON.parse(raw);
    } catch {
      throw malformed('not JSON');
    }
  } else if (JSON.stringify(raw ?? null).length > maxClaimsParameterLength) {
    throw malformed('longer than allowed');
  }
  if (!isObject(value)) throw malformed('not a JSON object');
  const userinfo = readTarget(value.userinfo, 'userinfo');
  const idToken = readTarget(value.id_token, 'id_token');

  const personal = (claims: Map<string, unknown>) => [...claims.keys()].filter(isPersonClaim);
  const requested = { userinfo: personal(userinfo), idToken: personal(idToken) };

  // The same person must be meant wherever sub is asked for with a value.
  const subjects = [...new Set([...namedValues(userinfo.get('sub')), ...namedValues(idToken.get('sub'))])];
  if (subjects.length > 1) throw malformed('sub is asked for with different values');
  // Core §2: a sub is at most 255 ASCII characters; anything else names no one here.
  if (subjects.some((s) => !/^[\x20-\x7e]{1,255}$/.test(s))) throw malformed('sub value is not a subject identifier');

  const acrRequest = idToken.get('acr') ?? userinfo.get('acr');
  const acrValues = namedValues(acrRequest);

  return {
    requested: requested.userinfo.length + requested.idToken.length === 0 ? undefined : requested,
    subject: subjects[0],
    acr: acrValues.length === 0 ? undefined : { values: acrValues, essential: acrRequest?.essential === true },
  };
}
