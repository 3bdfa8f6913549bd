/**
 * Plain domain records for tests, with defaults that override per case. Shared by the store
 * conformance suite and the unit tests so that a new field is added in one place.
 */
import type {
  ApiRecord,
  AuthorizationCodeRecord,
  AuthorizationRequest,
  ClientRecord,
  ConsentRecord,
  DeviceGrantRecord,
  EmailTokenRecord,
  PasskeyRecord,
  RefreshTokenRecord,
  SessionRecord,
  SigningKeyRecord,
  TotpRecord,
  UserRecord,
} from '../../src/store/store.js';

/** The fixed "now" of record fixtures (epoch seconds). */
export const t0 = 1_800_000_000;

/**
 * A password hash as earlier versions stored it (scrypt, N=2^15, r=8, p=1, 16-byte salt, 32-byte
 * key, base64url), with its password: databases made then still hold such hashes.
 */
export const earlierScryptHash = {
  password: 'correct horse battery staple',
  hash: 'scrypt$32768$8$1$bGF0Y2hrZXktc2NyeXB0LQ$o6IRvAIUYkcNh8GBhRl4fjMBUVoSRFQ3xDXSwsWozuc',
} as const;

export function user(overrides: Partial<UserRecord> = {}): UserRecord {
  const username = overrides.username ?? 'alice';
  return {
    id: `user-${username.toLowerCase()}`,
    username,
    email: `${username.toLowerCase()}@example.com`,
    name: 'Alice Example',
    passwordHash: 'scrypt$32768$8$1$salt$hash',
    disabled: false,
    createdAt: t0,
    tokensRevokedAt: undefined,
    source: 'local',
    emailVerified: true,
    groups: [],
    roles: [],
    profile: {},
    updatedAt: overrides.createdAt ?? t0,
    ...overrides,
  };
}

export function client(overrides: Partial<ClientRecord> = {}): ClientRecord {
  return {
    clientId: 'cli',
    name: 'Command line',
    secretHash: undefined,
    redirectUris: [],
    grantTypes: ['device_code', 'refresh_token'],
    requirePkce: true,
    firstParty: false,
    builtIn: false,
    createdAt: t0,
    tokensRevokedAt: undefined,
    postLogoutRedirectUris: [],
    webOrigins: [],
    backchannelLogoutUri: undefined,
    jwksUri: undefined,
    jwks: undefined,
    secretSealed: undefined,
    previousSecretHash: undefined,
    previousSecretSealed: undefined,
    previousSecretExpiresAt: undefined,
    disabled: false,
    registrationAccessTokenHash: undefined,
    tokenEndpointAuthMethod: undefined,
    requirePar: false,
    managedBy: undefined,
    ...overrides,
  };
}

export function api(overrides: Partial<ApiRecord> = {}): ApiRecord {
  return {
    identifier: 'https://api.example.com',
    name: 'Example API',
    createdAt: t0,
    introspectionClients: [],
    scopes: [],
    managedBy: undefined,
    ...overrides,
  };
}

export function signingKey(kid: string, createdAt = t0, alg: SigningKeyRecord['alg'] = 'RS256'): Omit<SigningKeyRecord, 'retiredAt'> {
  return {
    kid,
    alg,
    privateKeyPem: `-----BEGIN PRIVATE KEY-----\n${kid}\n-----END PRIVATE KEY-----\n`,
    publicJwk: { kty: 'RSA', kid, alg: 'RS256', use: 'sig', n: `n-of-${kid}`, e: 'AQAB' },
    createdAt,
  };
}

/** The public id follows the digest (`sid-<idHash>`), so sessions that differ in idHash differ in id too. */
export function session(overrides: Partial<SessionRecord> = {}): SessionRecord {
  const idHash = overrides.idHash ?? 'session-hash-1';
  return {
    idHash,
    userId: 'user-alice',
    authTime: t0,
    amr: ['pwd'],
    createdAt: t0,
    expiresAt: t0 + 3600,
    interactionId: undefined,
    id: `sid-${idHash}`,
    ip: '198.51.100.7',
    userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0',
    lastSeenAt: undefined,
    ...overrides,
  };
}

export function deviceGrant(overrides: Partial<DeviceGrantRecord> = {}): DeviceGrantRecord {
  const id = overrides.id ?? 'grant-1';
  return {
    id,
    deviceCodeHash: `device-${id}`,
    userCodeHash: `user-${id}`,
    clientId: 'cli',
    scope: 'openid offline_access',
    audience: 'https://api.example.com',
    status: 'pending',
    interval: 5,
    lastPolledAtMs: undefined,
    userId: undefined,
    authTime: undefined,
    amr: [],
    acrValues: '',
    requesterIp: '203.0.113.9',
    requesterUserAgent: 'latchkey-cli/0.1',
    createdAt: t0,
    expiresAt: t0 + 900,
    decidedAt: undefined,
    consumedAt: undefined,
    accessTokenJti: undefined,
    refreshFamilyId: undefined,
    issuedAt: undefined,
    recoveries: 0,
    dpopJkt: undefined,
    ...overrides,
  };
}

export function refreshToken(overrides: Partial<RefreshTokenRecord> = {}): RefreshTokenRecord {
  return {
    id: 'rt-1',
    tokenHash: 'refresh-hash-1',
    familyId: 'family-1',
    clientId: 'cli',
    userId: 'user-alice',
    scope: 'openid offline_access',
    audience: 'https://api.example.com',
    authTime: t0,
    amr: ['pwd'],
    createdAt: t0,
    expiresAt: t0 + 14 * 86400,
    familyExpiresAt: t0 + 30 * 86400,
    rotatedAt: undefined,
    revokedAt: undefined,
    parentId: undefined,
    supersededAt: undefined,
    // As a device-flow grant: approved from the device's request, in no browser session.
    approvedIp: '203.0.113.9',
    approvedUserAgent: 'latchkey-cli/0.1',
    sessionId: undefined,
    dpopJkt: undefined,
    claims: undefined,
    accessTokenJti: undefined,
    ...overrides,
  };
}

// ─── Authorization Code flow ────────────────────────────────────────────────────────────────

export function authorizationRequest(overrides: Partial<AuthorizationRequest> = {}): AuthorizationRequest {
  return {
    clientId: 'cli',
    redirectUri: 'http://127.0.0.1:53682/callback',
    scope: 'openid email offline_access',
    audience: 'https://api.example.com',
    state: 'state-xyz',
    nonce: 'nonce-123',
    codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    prompt: [],
    ...overrides,
  };
}

export function consent(overrides: Partial<ConsentRecord> = {}): ConsentRecord {
  return {
    userId: 'user-alice',
    clientId: 'cli',
    audience: 'https://api.example.com',
    scope: 'openid email',
    grantedAt: t0,
    ...overrides,
  };
}

export function authorizationCode(overrides: Partial<AuthorizationCodeRecord> = {}): AuthorizationCodeRecord {
  return {
    codeHash: 'code-hash-1',
    clientId: 'cli',
    userId: 'user-alice',
    redirectUri: 'http://127.0.0.1:53682/callback',
    scope: 'openid email offline_access',
    audience: 'https://api.example.com',
    nonce: 'nonce-123',
    codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    authTime: t0 - 30,
    amr: ['pwd'],
    createdAt: t0,
    expiresAt: t0 + 60,
    consumedAt: undefined,
    accessTokenJti: undefined,
    refreshFamilyId: undefined,
    approvedIp: '198.51.100.7',
    approvedUserAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0',
    sessionId: 'sid-session-hash-1',
    dpopJkt: undefined,
    claims: undefined,
    ...overrides,
  };
}

// ─── Accounts ───────────────────────────────────────────────────────────────────────────────

export function emailToken(overrides: Partial<EmailTokenRecord> = {}): EmailTokenRecord {
  return {
    tokenHash: 'email-token-hash-1',
    userId: 'user-alice',
    purpose: 'password_reset',
    email: 'alice@example.com',
    createdAt: t0,
    expiresAt: t0 + 1800,
    usedAt: undefined,
    ...overrides,
  };
}

// ─── Second factors ─────────────────────────────────────────────────────────────────────────

export function totp(overrides: Partial<TotpRecord> = {}): TotpRecord {
  return { userId: 'user-alice', secret: 'lk1.sealed-totp-secret', lastStep: Math.floor(t0 / 30) - 1, createdAt: t0, ...overrides };
}

export function passkey(overrides: Partial<PasskeyRecord> = {}): PasskeyRecord {
  return {
    id: 'AaBbCc-_0123456789',
    userId: 'user-alice',
    publicKey: 'pQECAyYgASFYIMx2zKp3d8zH8bQpWk3d4n9Z0G8l5R1x2y3z4A5B6C7DIlggQ',
    counter: 0,
    transports: ['internal', 'hybrid'],
    name: 'MacBook Touch ID',
    backedUp: true,
    createdAt: t0,
    lastUsedAt: undefined,
    ...overrides,
  };
}
