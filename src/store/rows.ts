/**
 * Database rows (snake_case) to domain records (camelCase), for both stores, so that they return
 * the very same records: NULL becomes undefined; numbers become numbers (node-postgres hands BIGINT
 * over as a string, since it may exceed 2^53); a flag is SQLite's 1 or PostgreSQL's true; JSON kept
 * as TEXT is parsed.
 */
import type {
  RateLimitCounter,
  ApiRecord,
  PublicJwk,
  AuditEventRecord,
  AuthMethod,
  AuthorizationCodeRecord,
  ClientChanges,
  ClientGrantRecord,
  ClientRecord,
  ConnectorRecord,
  ConnectorType,
  ConsentRecord,
  DeviceGrantRecord,
  DeviceGrantStatus,
  EmailTokenPurpose,
  EmailTokenRecord,
  GrantTypeName,
  PasskeyRecord,
  PostalAddress,
  Permission,
  PushedRequestRecord,
  RefreshFamilySummary,
  RefreshTokenRecord,
  RegisteredClientUpdate,
  RegistrationTokenRecord,
  RemovedIdentityRecord,
  RequestedClaims,
  RoleRecord,
  SessionRecord,
  SigningAlgorithm,
  SigningKeyRecord,
  TokenEndpointAuthMethod,
  TotpRecord,
  UserIdentityRecord,
  UserProfileClaims,
  UserRecord,
} from './store.js';
import { postalAddressMembers } from './store.js';

export type Row = Record<string, unknown>;

const text = (v: unknown): string => String(v);
const optionalText = (v: unknown): string | undefined => (v === null || v === undefined ? undefined : text(v));
const optionalNumber = (v: unknown): number | undefined => (v === null || v === undefined ? undefined : Number(v));
/** SQLite stores booleans as 1/0, PostgreSQL as true/false. */
const flag = (v: unknown): boolean => v === true || v === 1;

/** amr is stored space-separated ("pwd otp"); '' (rows from before second factors were recorded) is none. */
export function amrFromText(v: unknown): AuthMethod[] {
  return v === null || v === undefined
    ? []
    : (text(v)
        .split(' ')
        .filter((m) => m !== '') as AuthMethod[]);
}

export function amrToText(amr: readonly AuthMethod[]): string {
  return amr.join(' ');
}

export function toUser(r: Row): UserRecord {
  return {
    id: text(r.id),
    username: text(r.username),
    email: text(r.email),
    name: optionalText(r.name),
    passwordHash: text(r.password_hash),
    disabled: flag(r.disabled),
    createdAt: Number(r.created_at),
    tokensRevokedAt: optionalNumber(r.tokens_revoked_at),
    source: r.source === undefined || r.source === null ? 'local' : text(r.source),
    emailVerified: r.email_verified === undefined || r.email_verified === null ? true : flag(r.email_verified),
    groups: JSON.parse(text(r.groups ?? '[]')) as string[],
    // A JSON array of role names, already sorted by the query that read the user.
    roles: JSON.parse(text(r.roles ?? '[]')) as string[],
    profile: profileFromText(r.profile),
    // Rows read before the column existed (none after the migration) last changed when made.
    updatedAt: Number(r.updated_at ?? r.created_at),
  };
}

const profileStrings = [
  'given_name',
  'family_name',
  'middle_name',
  'nickname',
  'profile',
  'picture',
  'website',
  'gender',
  'birthdate',
  'zoneinfo',
  'locale',
  'phone_number',
] as const satisfies ReadonlyArray<keyof UserProfileClaims>;

/**
 * The profile claims column (a JSON object) as a record. It is released to clients as it is read,
 * so only the claims of UserProfileClaims with their types are kept: a column edited by hand into
 * something else (not JSON, a claim of the wrong type) loses what does not fit instead of failing
 * every read of the user.
 */
export function profileFromText(v: unknown): UserProfileClaims {
  if (v === null || v === undefined) return {};
  const stored = parseObject(text(v));
  const profile: UserProfileClaims = {};
  for (const claim of profileStrings) {
    const value = stored[claim];
    if (typeof value === 'string') profile[claim] = value;
  }
  if (typeof stored.phone_number_verified === 'boolean') profile.phone_number_verified = stored.phone_number_verified;
  const storedAddress = stored.address;
  if (typeof storedAddress === 'object' && storedAddress !== null && !Array.isArray(storedAddress)) {
    const address: PostalAddress = {};
    for (const member of postalAddressMembers) {
      const value = (storedAddress as Record<string, unknown>)[member];
      if (typeof value === 'string') address[member] = value;
    }
    if (Object.keys(address).length > 0) profile.address = address;
  }
  return profile;
}

export function profileToText(profile: UserProfileClaims): string {
  return JSON.stringify(profile);
}

/** The claims column of codes and refresh tokens: NULL (none asked for), or undefined when it is not what claimsToText wrote. */
export function claimsFromText(v: unknown): RequestedClaims | undefined {
  if (v === null || v === undefined) return undefined;
  const stored = parseObject(text(v));
  const names = (value: unknown): string[] | undefined => (Array.isArray(value) && value.every((name) => typeof name === 'string') ? value : undefined);
  const userinfo = names(stored.userinfo);
  const idToken = names(stored.idToken);
  return userinfo === undefined || idToken === undefined ? undefined : { userinfo, idToken };
}

export function claimsToText(claims: RequestedClaims | undefined): string | null {
  return claims === undefined ? null : JSON.stringify({ userinfo: claims.userinfo, idToken: claims.idToken });
}

/** A JSON column that should hold an object but does not (edited by hand) reads as empty: whoever uses it then finds nothing. */
function parseObject(json: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(json);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export function toConnector(r: Row): ConnectorRecord {
  return {
    id: text(r.id),
    type: text(r.type) as ConnectorType,
    name: text(r.name),
    config: parseObject(text(r.config)),
    secret: optionalText(r.secret),
    position: Number(r.position),
    createdAt: Number(r.created_at),
    managedBy: optionalText(r.managed_by),
  };
}

export function toUserIdentity(r: Row): UserIdentityRecord {
  return {
    connectorId: text(r.connector_id),
    subject: text(r.subject),
    userId: text(r.user_id),
    createdAt: Number(r.created_at),
    lastSignInAt: optionalNumber(r.last_sign_in_at),
  };
}

export function toRemovedIdentity(r: Row): RemovedIdentityRecord {
  return {
    connectorId: text(r.connector_id),
    subject: text(r.subject),
    userId: text(r.user_id),
    linkedAt: Number(r.linked_at),
    removedAt: Number(r.removed_at),
  };
}

export function toClient(r: Row): ClientRecord {
  return {
    clientId: text(r.client_id),
    name: text(r.name),
    secretHash: optionalText(r.secret_hash),
    redirectUris: JSON.parse(text(r.redirect_uris)) as string[],
    grantTypes: JSON.parse(text(r.grant_types)) as GrantTypeName[],
    requirePkce: flag(r.require_pkce),
    firstParty: flag(r.first_party),
    builtIn: flag(r.built_in),
    createdAt: Number(r.created_at),
    tokensRevokedAt: optionalNumber(r.tokens_revoked_at),
    postLogoutRedirectUris: JSON.parse(text(r.post_logout_redirect_uris)) as string[],
    webOrigins: JSON.parse(text(r.web_origins)) as string[],
    backchannelLogoutUri: optionalText(r.backchannel_logout_uri),
    jwksUri: optionalText(r.jwks_uri),
    jwks: r.jwks === null || r.jwks === undefined ? undefined : (JSON.parse(text(r.jwks)) as { keys: Record<string, unknown>[] }),
    secretSealed: optionalText(r.secret_sealed),
    previousSecretHash: optionalText(r.previous_secret_hash),
    previousSecretSealed: optionalText(r.previous_secret_sealed),
    previousSecretExpiresAt: optionalNumber(r.previous_secret_expires_at),
    disabled: flag(r.disabled),
    registrationAccessTokenHash: optionalText(r.registration_access_token_hash),
    tokenEndpointAuthMethod: optionalText(r.token_endpoint_auth_method) as TokenEndpointAuthMethod | undefined,
    requirePar: flag(r.require_par),
    managedBy: optionalText(r.managed_by),
  };
}

/** A row of clients' web_origins alone (listWebOrigins). */
export function toWebOrigins(r: Row): string[] {
  return JSON.parse(text(r.web_origins)) as string[];
}

/**
 * The columns updateClient sets for `changes`, with their stored values (`flag` gives the store's
 * boolean). Only these keys can change: anything else a caller passes (a secret, builtIn) is
 * ignored. A key given counts, so undefined clears a column that may be empty (jwksUri, jwks,
 * backchannelLogoutUri); a required one given as undefined is left as it is.
 */
export function clientChangeColumns(changes: ClientChanges, flag: (value: boolean) => unknown): Array<[column: string, value: unknown]> {
  const columns: Array<[string, unknown]> = [];
  if (changes.name !== undefined) columns.push(['name', changes.name]);
  if (changes.redirectUris !== undefined) columns.push(['redirect_uris', JSON.stringify(changes.redirectUris)]);
  if (changes.postLogoutRedirectUris !== undefined) columns.push(['post_logout_redirect_uris', JSON.stringify(changes.postLogoutRedirectUris)]);
  if (changes.webOrigins !== undefined) columns.push(['web_origins', JSON.stringify(changes.webOrigins)]);
  if ('backchannelLogoutUri' in changes) columns.push(['backchannel_logout_uri', changes.backchannelLogoutUri ?? null]);
  if (changes.grantTypes !== undefined) columns.push(['grant_types', JSON.stringify(changes.grantTypes)]);
  if (changes.firstParty !== undefined) columns.push(['first_party', flag(changes.firstParty)]);
  if (changes.requirePkce !== undefined) columns.push(['require_pkce', flag(changes.requirePkce)]);
  if ('jwksUri' in changes) columns.push(['jwks_uri', changes.jwksUri ?? null]);
  if ('jwks' in changes) columns.push(['jwks', changes.jwks === undefined ? null : JSON.stringify(changes.jwks)]);
  return columns;
}

export function toApi(r: Row): ApiRecord {
  return {
    identifier: text(r.identifier),
    name: text(r.name),
    createdAt: Number(r.created_at),
    introspectionClients: JSON.parse(text(r.introspection_clients ?? '[]')) as string[],
    scopes: JSON.parse(text(r.scopes ?? '[]')) as string[],
    managedBy: optionalText(r.managed_by),
  };
}

/**
 * A role row joined with `permissions` (a JSON array of {api, scope}, sorted by the query),
 * `group_names` (a JSON array, sorted) and `members` (a count).
 */
export function toRole(r: Row): RoleRecord {
  const permissions = JSON.parse(text(r.permissions ?? '[]')) as Permission[];
  return {
    name: text(r.name),
    description: optionalText(r.description),
    permissions: permissions.map((p) => ({ api: p.api, scope: p.scope })),
    builtIn: flag(r.built_in),
    createdAt: Number(r.created_at),
    members: Number(r.members ?? 0),
    groups: JSON.parse(text(r.group_names ?? '[]')) as string[],
    managedBy: optionalText(r.managed_by),
  };
}

export function toClientGrant(r: Row): ClientGrantRecord {
  return {
    clientId: text(r.client_id),
    api: text(r.api),
    scopes: JSON.parse(text(r.scopes)) as string[],
    createdAt: Number(r.created_at),
  };
}

export function toAuditEvent(r: Row): AuditEventRecord {
  return {
    id: Number(r.id),
    at: Number(r.at),
    event: text(r.event),
    actor: optionalText(r.actor),
    userId: optionalText(r.user_id),
    clientId: optionalText(r.client_id),
    ip: optionalText(r.ip),
    details: parseObject(text(r.details ?? '{}')),
  };
}

export function toSigningKey(r: Row): SigningKeyRecord {
  return {
    kid: text(r.kid),
    alg: text(r.alg) as SigningAlgorithm,
    privateKeyPem: text(r.private_key_pem),
    publicJwk: JSON.parse(text(r.public_jwk)) as PublicJwk,
    createdAt: Number(r.created_at),
    retiredAt: optionalNumber(r.retired_at),
  };
}

export function toSession(r: Row): SessionRecord {
  return {
    idHash: text(r.id_hash),
    userId: text(r.user_id),
    authTime: Number(r.auth_time),
    amr: amrFromText(r.amr),
    createdAt: Number(r.created_at),
    expiresAt: Number(r.expires_at),
    interactionId: optionalText(r.interaction_id),
    id: text(r.public_id),
    ip: optionalText(r.ip),
    userAgent: optionalText(r.user_agent),
    lastSeenAt: optionalNumber(r.last_seen_at),
  };
}

export function toDeviceGrant(r: Row): DeviceGrantRecord {
  return {
    id: text(r.id),
    deviceCodeHash: text(r.device_code_hash),
    userCodeHash: text(r.user_code_hash),
    clientId: text(r.client_id),
    scope: text(r.scope),
    audience: text(r.audience),
    status: text(r.status) as DeviceGrantStatus,
    interval: Number(r.poll_interval),
    lastPolledAtMs: optionalNumber(r.last_polled_at_ms),
    userId: optionalText(r.user_id),
    authTime: optionalNumber(r.auth_time),
    amr: amrFromText(r.amr),
    acrValues: r.acr_values === undefined || r.acr_values === null ? '' : text(r.acr_values),
    requesterIp: text(r.requester_ip),
    requesterUserAgent: text(r.requester_user_agent),
    createdAt: Number(r.created_at),
    expiresAt: Number(r.expires_at),
    decidedAt: optionalNumber(r.decided_at),
    consumedAt: optionalNumber(r.consumed_at),
    accessTokenJti: optionalText(r.access_token_jti),
    refreshFamilyId: optionalText(r.refresh_family_id),
    issuedAt: optionalNumber(r.issued_at),
    recoveries: r.recoveries === undefined || r.recoveries === null ? 0 : Number(r.recoveries),
    dpopJkt: optionalText(r.dpop_jkt),
  };
}

export function toRefreshToken(r: Row): RefreshTokenRecord {
  return {
    id: text(r.id),
    tokenHash: text(r.token_hash),
    familyId: text(r.family_id),
    clientId: text(r.client_id),
    userId: text(r.user_id),
    scope: text(r.scope),
    audience: text(r.audience),
    authTime: Number(r.auth_time),
    amr: amrFromText(r.amr),
    createdAt: Number(r.created_at),
    expiresAt: Number(r.expires_at),
    familyExpiresAt: Number(r.family_expires_at),
    rotatedAt: optionalNumber(r.rotated_at),
    revokedAt: optionalNumber(r.revoked_at),
    parentId: optionalText(r.parent_id),
    supersededAt: optionalNumber(r.superseded_at),
    approvedIp: optionalText(r.approved_ip),
    approvedUserAgent: optionalText(r.approved_user_agent),
    sessionId: optionalText(r.session_id),
    dpopJkt: optionalText(r.dpop_jkt),
    claims: claimsFromText(r.claims),
    accessTokenJti: optionalText(r.access_token_jti),
  };
}

/** A live family's token joined with first_created_at and last_created_at, the family's first and newest tokens' times. */
export function toRefreshFamilySummary(r: Row): RefreshFamilySummary {
  return {
    familyId: text(r.family_id),
    userId: text(r.user_id),
    clientId: text(r.client_id),
    scope: text(r.scope),
    audience: text(r.audience),
    createdAt: Number(r.first_created_at),
    lastUsedAt: Number(r.last_created_at),
    expiresAt: Number(r.expires_at),
    approvedIp: optionalText(r.approved_ip),
    approvedUserAgent: optionalText(r.approved_user_agent),
    sessionId: optionalText(r.session_id),
  };
}

export function toEmailToken(r: Row): EmailTokenRecord {
  return {
    tokenHash: text(r.token_hash),
    userId: text(r.user_id),
    purpose: text(r.purpose) as EmailTokenPurpose,
    email: text(r.email),
    createdAt: Number(r.created_at),
    expiresAt: Number(r.expires_at),
    usedAt: optionalNumber(r.used_at),
  };
}

export function toConsent(r: Row): ConsentRecord {
  return {
    userId: text(r.user_id),
    clientId: text(r.client_id),
    audience: text(r.audience),
    scope: text(r.scope),
    grantedAt: Number(r.granted_at),
  };
}

export function toAuthorizationCode(r: Row): AuthorizationCodeRecord {
  return {
    codeHash: text(r.code_hash),
    clientId: text(r.client_id),
    userId: text(r.user_id),
    redirectUri: text(r.redirect_uri),
    scope: text(r.scope),
    audience: text(r.audience),
    nonce: optionalText(r.nonce),
    codeChallenge: optionalText(r.code_challenge),
    authTime: Number(r.auth_time),
    amr: amrFromText(r.amr),
    createdAt: Number(r.created_at),
    expiresAt: Number(r.expires_at),
    consumedAt: optionalNumber(r.consumed_at),
    accessTokenJti: optionalText(r.access_token_jti),
    refreshFamilyId: optionalText(r.refresh_family_id),
    approvedIp: optionalText(r.approved_ip),
    approvedUserAgent: optionalText(r.approved_user_agent),
    sessionId: optionalText(r.session_id),
    dpopJkt: optionalText(r.dpop_jkt),
    claims: claimsFromText(r.claims),
  };
}

export function toTotp(r: Row): TotpRecord {
  return {
    userId: text(r.user_id),
    secret: text(r.secret),
    lastStep: Number(r.last_step),
    createdAt: Number(r.created_at),
  };
}

/** A transports column that is not a JSON array of strings (edited by hand) reads as none: they are only hints. */
function parseTransports(json: string): string[] {
  try {
    const value: unknown = JSON.parse(json);
    return Array.isArray(value) ? value.filter((t): t is string => typeof t === 'string') : [];
  } catch {
    return [];
  }
}

export function toPasskey(r: Row): PasskeyRecord {
  return {
    id: text(r.id),
    userId: text(r.user_id),
    publicKey: text(r.public_key),
    counter: Number(r.counter),
    transports: parseTransports(text(r.transports ?? '[]')),
    name: text(r.name),
    backedUp: flag(r.backed_up),
    createdAt: Number(r.created_at),
    lastUsedAt: optionalNumber(r.last_used_at),
  };
}

export function toRateLimitCounter(r: Row): RateLimitCounter {
  return { count: Number(r.count), startedAt: Number(r.started_at), lastAt: Number(r.last_at) };
}

// --- Dynamic client registration (RFC 7591/7592) ---

export function toRegistrationToken(r: Row): RegistrationTokenRecord {
  return {
    tokenHash: text(r.token_hash),
    createdAt: Number(r.created_at),
    expiresAt: Number(r.expires_at),
    usedAt: optionalNumber(r.used_at),
    clientId: optionalText(r.client_id),
  };
}

/**
 * The columns updateRegisteredClient sets: those of clientChangeColumns, the registered method, and
 * the secret as `update.secret` says (a new or no secret drops a rotation's previous one too).
 */
export function registeredClientColumns(update: RegisteredClientUpdate, flag: (value: boolean) => unknown): Array<[column: string, value: unknown]> {
  const columns = clientChangeColumns(update.changes, flag);
  columns.push(['token_endpoint_auth_method', update.tokenEndpointAuthMethod]);
  if (update.secret !== 'keep') {
    columns.push(
      ['secret_hash', update.secret?.hash ?? null],
      ['secret_sealed', update.secret?.sealed ?? null],
      ['previous_secret_hash', null],
      ['previous_secret_sealed', null],
      ['previous_secret_expires_at', null],
    );
  }
  return columns;
}

// --- Pushed authorization requests (RFC 9126) ---

export function toPushedRequest(r: Row): PushedRequestRecord {
  return {
    requestHash: text(r.request_hash),
    clientId: text(r.client_id),
    parameters: JSON.parse(text(r.parameters)) as Record<string, string>,
    createdAt: Number(r.created_at),
    expiresAt: Number(r.expires_at),
    usedAt: optionalNumber(r.used_at),
  };
}
