/**
 * The Store: every read and write of persistent state, as domain verbs. Each method is one atomic
 * unit and returns a Promise so that a PostgreSQL implementation fits behind the same interface.
 * Nothing outside src/store/ touches SQL. A missing record is `undefined`, never an exception.
 */
import type { MigrationRun } from './migration_history.js';

/** The algorithms a signing key may have (crypto/keys.ts makes them). */
export type SigningAlgorithm = 'RS256' | 'ES256' | 'EdDSA';

/** A signing key's public half as the JWKS publishes it (RFC 7517 §4). */
export interface PublicJwk {
  kty: string;
  kid: string;
  alg: string;
  use: 'sig';
  n?: string;
  e?: string;
  crv?: string;
  x?: string;
  y?: string;
}

export type GrantTypeName = 'authorization_code' | 'device_code' | 'refresh_token' | 'client_credentials';

/** OIDC Core §5.1.1: a postal address; every member optional, at least one present. */
export interface PostalAddress {
  formatted?: string;
  street_address?: string;
  locality?: string;
  region?: string;
  postal_code?: string;
  country?: string;
}

/** The members of a postal address, in OIDC Core §5.1.1's order. */
export const postalAddressMembers = ['formatted', 'street_address', 'locality', 'region', 'postal_code', 'country'] as const satisfies ReadonlyArray<
  keyof PostalAddress
>;

/**
 * The OIDC Core §5.1 standard claims a person's record holds besides its own columns (username →
 * preferred_username, name, email, email_verified): set by operators (`latchkey users add|update`),
 * released by the `profile`, `phone` and `address` scopes or the `claims` parameter. Members use
 * the claims' own names and types, so a profile is released as it is stored.
 */
export interface UserProfileClaims {
  given_name?: string;
  family_name?: string;
  middle_name?: string;
  nickname?: string;
  /** The person's profile page (a URL), OIDC's `profile` claim. */
  profile?: string;
  picture?: string;
  website?: string;
  gender?: string;
  /** YYYY-MM-DD, 0000-MM-DD (year withheld) or YYYY. */
  birthdate?: string;
  /** An IANA time zone, e.g. Europe/Paris. */
  zoneinfo?: string;
  /** A BCP 47 language tag, e.g. fr-CA. */
  locale?: string;
  /** E.164 recommended, e.g. +1 (425) 555-1212 is stored as given. */
  phone_number?: string;
  phone_number_verified?: boolean;
  address?: PostalAddress;
}

/**
 * What a client asked for with the OIDC `claims` request parameter (Core §5.5), reduced to what
 * issuance needs: the claim names to release from userinfo and in the id_token. Values and
 * `essential` were applied when the request was made (an essential acr, a sub value).
 */
export interface RequestedClaims {
  userinfo: string[];
  idToken: string[];
}

export interface UserRecord {
  id: string;
  username: string;
  email: string;
  name: string | undefined;
  passwordHash: string;
  disabled: boolean;
  createdAt: number;
  /**
   * Access tokens of this user issued at or before this time are refused, and so are codes and
   * device approvals made by then (a new password, a disabled account, `users revoke-tokens`).
   */
  tokensRevokedAt: number | undefined;
  /** 'local' (made by an operator), or the id of the connector whose first sign-in made the user. */
  source: string;
  /** Operators' entries count as verified; an upstream says for its users. */
  emailVerified: boolean;
  /** Groups from the upstream (refreshed at each upstream sign-in), for `groups` in tokens. */
  groups: string[];
  /**
   * The roles the user holds, granted by hand (`users grant`) or through an upstream group, each
   * once, sorted by name: filled in by the store on every read, ignored by createUser (a new user
   * has none).
   */
  roles: string[];
  /** The standard claims beyond the columns above ({} when none are set). */
  profile: UserProfileClaims;
  /**
   * When the person's information (name, email, profile) last changed: OIDC `updated_at`. A new
   * user's is its createdAt; updateUser, updateUserProfile and an upstream sign-in that changes
   * the name or email move it.
   */
  updatedAt: number;
}

export type ConnectorType = 'oidc' | 'github' | 'ldap';

/** An upstream identity provider (see src/connectors/). */
export interface ConnectorRecord {
  id: string;
  type: ConnectorType;
  name: string;
  /** The settings that are not secret, as validated by connectors/connector_config.ts for the type. */
  config: Record<string, unknown>;
  /** The client secret or bind password, sealed (crypto/secret_box.ts); undefined when there is none. */
  secret: string | undefined;
  /** LDAP directories are tried in this order, and sign-in buttons shown in it. */
  position: number;
  createdAt: number;
  /**
   * The configuration file that declares this object (its absolute path, as given to `latchkey
   * config apply`), undefined when it is not managed. The admin commands and the console refuse to
   * change a managed object: the file would undo it at the next apply.
   */
  managedBy: string | undefined;
}

/** A person's identity upstream, bound to a local user. */
export interface UserIdentityRecord {
  connectorId: string;
  /** The upstream's stable id of the person (OIDC `sub`, GitHub user id, LDAP entryUUID or DN). */
  subject: string;
  userId: string;
  createdAt: number;
  lastSignInAt: number | undefined;
}

/**
 * An upstream identity removed from the user it was linked to: it signs in no more (neither as
 * that user, nor linked again by its email, nor as a new account) until an administrator allows it
 * again.
 */
export interface RemovedIdentityRecord {
  connectorId: string;
  subject: string;
  /** The user it was linked to. */
  userId: string;
  /** When it was linked (the identity's createdAt). */
  linkedAt: number;
  removedAt: number;
}

/**
 * What must remain for a person's own removal of a linked identity to go ahead: some other way to
 * sign in — a password here, an identity at another connector, or (where passkeys sign in on
 * their own) a passkey. Checked in the same step as the removal, so two removals at once cannot
 * both take the last way in.
 */
export interface AnotherWayIn {
  /** Whether a passkey alone signs in on this server (WebAuthn available: LATCHKEY_MFA not off, a secure issuer). */
  passkeysSignIn: boolean;
}

/** What an upstream sign-in refreshes on the user; profile fields only for users it created. */
export interface UpstreamProfileUpdate {
  email?: string;
  name?: string | undefined;
  emailVerified?: boolean;
  groups: string[];
}

export interface ClientRecord {
  clientId: string;
  name: string;
  /** SHA-256 of the client secret; undefined for public clients. */
  secretHash: string | undefined;
  redirectUris: string[];
  grantTypes: GrantTypeName[];
  requirePkce: boolean;
  firstParty: boolean;
  builtIn: boolean;
  createdAt: number;
  /**
   * Set by the store when this client_id was removed before and registered again: tokens issued at
   * or before that removal belonged to the old client and are refused. Callers pass undefined.
   */
  tokensRevokedAt: number | undefined;
  /** Where RP-Initiated Logout may send the person afterwards (exact matches). */
  postLogoutRedirectUris: string[];
  /**
   * The origins whose browser code may call the token, userinfo, revocation and device
   * authorization endpoints for this client (CORS): serialised origins, scheme://host[:port] in
   * lower case without a default port (directory/web_origin.ts), compared exactly with the Origin
   * header. A public client with one is a browser application (oauth/browser_policy.ts).
   */
  webOrigins: string[];
  /** Where OIDC Back-Channel Logout tokens are POSTed when a session the client signed in through ends. */
  backchannelLogoutUri: string | undefined;
  /**
   * The client's public keys for private_key_jwt (RFC 7523): fetched from this https address
   * (cached), or stored (`jwks`, a JWK Set of public keys only). Such a client is confidential
   * without a secret.
   */
  jwksUri: string | undefined;
  jwks: { keys: Record<string, unknown>[] } | undefined;
  /**
   * The client secret sealed (crypto/secret_box.ts, context `client_secret:<clientId>`): the HMAC
   * key of client_secret_jwt. Undefined for public clients and for secrets made before it was kept.
   */
  secretSealed: string | undefined;
  /** The secret replaced by `clients rotate-secret --keep-old-for`, accepted until previousSecretExpiresAt. */
  previousSecretHash: string | undefined;
  previousSecretSealed: string | undefined;
  previousSecretExpiresAt: number | undefined;
  /** A disabled client cannot authenticate, start a flow or use its tokens; `clients enable` lifts it. */
  disabled: boolean;
  /**
   * Dynamic client registration (RFC 7591/7592): the SHA-256 of the registration access token that
   * manages the client at its registration_client_uri; undefined for clients an operator made. Set
   * only by registerClient (createClient and ensureClient store neither registration field).
   */
  registrationAccessTokenHash: string | undefined;
  /**
   * The token_endpoint_auth_method the client registered (RFC 7591 §2), which tells
   * client_secret_basic from client_secret_post; undefined for clients an operator made.
   */
  tokenEndpointAuthMethod: TokenEndpointAuthMethod | undefined;
  /**
   * The client must push its authorization requests (RFC 9126 §5, `clients add --require-par`):
   * /authorize refuses it anything but a request_uri from POST /oauth/par.
   */
  requirePar: boolean;
  /**
   * The configuration file that declares this object (its absolute path, as given to `latchkey
   * config apply`), undefined when it is not managed. The admin commands and the console refuse to
   * change a managed object: the file would undo it at the next apply.
   */
  managedBy: string | undefined;
}

/** RFC 7591 §2 token_endpoint_auth_method values this server accepts. */
export type TokenEndpointAuthMethod = 'none' | 'client_secret_basic' | 'client_secret_post' | 'client_secret_jwt' | 'private_key_jwt';

/** An initial access token for dynamic client registration (`clients registration-token`), kept as its digest. */
export interface RegistrationTokenRecord {
  tokenHash: string;
  createdAt: number;
  expiresAt: number;
  /** When a registration spent it (single use); undefined before. */
  usedAt: number | undefined;
  /** The client its registration made; undefined before. */
  clientId: string | undefined;
}

/** What an RFC 7592 update sets besides ClientChanges: the registered method and the secret. */
export interface RegisteredClientUpdate {
  changes: ClientChanges;
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
  /**
   * 'keep' the current secret, a new one (digest, and a sealed copy for client_secret_jwt) that
   * replaces it, or undefined: the client has no secret any more. Any rotation's previous secret is
   * dropped unless the secret is kept.
   */
  secret: 'keep' | { hash: string; sealed: string | undefined } | undefined;
}

/** What may be changed on a registered client (the admin console, `clients update`). */
export type ClientChanges = Partial<
  Pick<
    ClientRecord,
    | 'name'
    | 'redirectUris'
    | 'postLogoutRedirectUris'
    | 'webOrigins'
    | 'backchannelLogoutUri'
    | 'grantTypes'
    | 'firstParty'
    | 'requirePkce'
    | 'jwksUri'
    | 'jwks'
  >
>;

/** What a machine client may ask `client_credentials` tokens for: one API and some of its scopes. */
export interface ClientGrantRecord {
  clientId: string;
  api: string;
  /** In the order given; only scopes the API still declares are ever issued. */
  scopes: string[];
  createdAt: number;
}

/** One API permission: a scope the API declares. */
export interface Permission {
  api: string;
  scope: string;
}

/** A named bundle of API permissions given to people (`roles add`, `users grant`). */
export interface RoleRecord {
  name: string;
  description: string | undefined;
  /** Sorted by api, then scope; removed with their API. */
  permissions: Permission[];
  /** `admin`: made by the migration, may use the admin console, cannot be removed. */
  builtIn: boolean;
  createdAt: number;
  /** How many users hold it (filled in on reads). */
  members: number;
  /**
   * The upstream groups that grant the role (sorted, distinct; exact names): a person whose upstream
   * reports one of them at sign-in holds the role until a sign-in without it. Removed with the role.
   */
  groups: string[];
  /**
   * The configuration file that declares this object (its absolute path, as given to `latchkey
   * config apply`), undefined when it is not managed. The admin commands and the console refuse to
   * change a managed object: the file would undo it at the next apply.
   */
  managedBy: string | undefined;
}

/** What createRole takes: a role without what the store fills in; groups and managedBy optional. */
export type NewRole = Omit<RoleRecord, 'members' | 'builtIn' | 'groups' | 'managedBy'> & { groups?: string[]; managedBy?: string | undefined };

/** What updateRole may change: the permissions always replaced, description and groups when given. */
export interface RoleChanges {
  permissions?: Permission[];
  description?: string | undefined;
  groups?: string[];
}

/** The roles an upstream sign-in gave and took through groups (setGroupRoles), each sorted. */
export interface GroupRolesChange {
  gained: string[];
  lost: string[];
}

/** The kinds of objects a configuration file declares (setManagedBy). */
export type ManagedKind = 'client' | 'api' | 'role' | 'connector';

/** A record as the create verbs take it: `managedBy` may be left out (not managed). */
export type NewRecord<T extends { managedBy: string | undefined }> = Omit<T, 'managedBy'> & { managedBy?: string | undefined };

/** A stored audit event: who did what, to whom, from where (never a secret). */
export interface AuditEventRecord {
  /** Assigned by the store, increasing: newer events have larger ids (a paging cursor). */
  id: number;
  /** Epoch milliseconds. */
  at: number;
  event: string;
  /** Who acted for someone else: the admin's username (console), `cli` (an admin command); undefined when people act for themselves. */
  actor: string | undefined;
  userId: string | undefined;
  clientId: string | undefined;
  ip: string | undefined;
  /** The event's other fields (JSON object, bounded by the caller). */
  details: Record<string, unknown>;
}

/** Filters of the audit log (all optional, combined with AND); newest first. */
export interface AuditEventQuery {
  /** Epoch milliseconds, inclusive. */
  since?: number;
  /** Epoch milliseconds, exclusive. */
  until?: number;
  userId?: string;
  clientId?: string;
  /** An exact event name, or a prefix ending in '.' ("user." matches every user event). */
  event?: string;
  actor?: string;
  /** Only events with an id below this (the next page). */
  beforeId?: number;
  /** At most this many (the store caps it at 500). */
  limit: number;
}

export interface ApiRecord {
  identifier: string;
  name: string;
  createdAt: number;
  /** Confidential clients (the API's own servers) that may introspect tokens issued for it (RFC 7662 §4). */
  introspectionClients: string[];
  /** The permissions (scope names) the API declares (`apis add --scope`), in the order given. */
  scopes: string[];
  /**
   * The configuration file that declares this object (its absolute path, as given to `latchkey
   * config apply`), undefined when it is not managed. The admin commands and the console refuse to
   * change a managed object: the file would undo it at the next apply.
   */
  managedBy: string | undefined;
}

export interface SigningKeyRecord {
  kid: string;
  alg: SigningAlgorithm;
  privateKeyPem: string;
  publicJwk: PublicJwk;
  createdAt: number;
  retiredAt: number | undefined;
}

/**
 * How a person signed in (RFC 8176 authentication method references): `pwd` a password (local or a
 * directory's), `fed` an upstream identity provider, `otp` a TOTP or recovery code, `hwk` a passkey
 * (proof of possession of a key), `user` the passkey's user verification.
 */
export type AuthMethod = 'pwd' | 'fed' | 'otp' | 'hwk' | 'user';

export interface SessionRecord {
  idHash: string;
  userId: string;
  authTime: number;
  /** How the person signed in, in the order used (stored space-separated; older rows: []). */
  amr: AuthMethod[];
  createdAt: number;
  expiresAt: number;
  /** The authorization request (interaction id) this sign-in was made for, if any: what prompt=login asks for. */
  interactionId: string | undefined;
  /**
   * A public id, random and not derived from the cookie: what /account and `sessions revoke` name
   * the session by, and `sid` in id_tokens (OIDC Front/Back-Channel Logout). Older rows get one
   * from the migration.
   */
  id: string;
  /** Where the sign-in was made from: the address as the server saw it, and the User-Agent (≤ 256 characters). */
  ip: string | undefined;
  userAgent: string | undefined;
  /** The latest request seen with it (recorded at most every few minutes); undefined before any. */
  lastSeenAt: number | undefined;
}

export type DeviceGrantStatus = 'pending' | 'approved' | 'denied' | 'consumed';

export interface DeviceGrantRecord {
  id: string;
  deviceCodeHash: string;
  userCodeHash: string;
  clientId: string;
  scope: string;
  audience: string;
  status: DeviceGrantStatus;
  /** Current minimum poll spacing in seconds; grows by 5 on every slow_down. */
  interval: number;
  /** Epoch milliseconds of the latest poll, undefined before the first. */
  lastPolledAtMs: number | undefined;
  userId: string | undefined;
  authTime: number | undefined;
  /** How the approving person had signed in (set with the approval; [] before). */
  amr: AuthMethod[];
  /** The acr_values the device asked for at /oauth/device/code ('' when none). */
  acrValues: string;
  requesterIp: string;
  requesterUserAgent: string;
  createdAt: number;
  expiresAt: number;
  decidedAt: number | undefined;
  consumedAt: number | undefined;
  /** What the redemption handed out (the access token's jti, the refresh family): replaced if the device recovers a lost answer. */
  accessTokenJti: string | undefined;
  refreshFamilyId: string | undefined;
  /** When the latest tokens were handed out (the redemption, or the last recovery). */
  issuedAt: number | undefined;
  /** How many times the device recovered a lost answer (recoverDeviceGrant). */
  recoveries: number;
  /**
   * The DPoP key (RFC 7638 thumbprint) the redeeming poll's proof was by, if it had one: a
   * recovery of a lost answer needs a proof by the same key (RFC 9449 §5 binds what was handed out
   * to it), so that whoever else holds the device code cannot take the sign-in from the device.
   */
  dpopJkt: string | undefined;
}

export interface RefreshTokenRecord {
  id: string;
  tokenHash: string;
  familyId: string;
  clientId: string;
  userId: string;
  scope: string;
  audience: string;
  authTime: number;
  /** The amr of the sign-in that started the family, carried along every rotation. */
  amr: AuthMethod[];
  createdAt: number;
  /** min(familyExpiresAt, createdAt + idle timeout). */
  expiresAt: number;
  /** Absolute end of the family (first sign-in + LATCHKEY_REFRESH_TOKEN_TTL); rotation never extends it. */
  familyExpiresAt: number;
  /** When it was replaced by a successor. */
  rotatedAt: number | undefined;
  revokedAt: number | undefined;
  /** The token this one succeeded (undefined for the first of a family). */
  parentId: string | undefined;
  /**
   * When it was replaced unused: by a retry or a device's recovery of a lost answer (it was that
   * lost answer), or as the stalest live branch of a family grown past its bound of branches. This
   * branch is dead, and presenting it is reuse (RFC 9700 §4.14.2), whatever the grace window says.
   */
  supersededAt: number | undefined;
  /**
   * Where the grant was approved from, as the confirmation page showed it — the device's request
   * (device flow) or the person's browser (code flow) — carried along every rotation.
   */
  approvedIp: string | undefined;
  approvedUserAgent: string | undefined;
  /** The browser session (its public id) the grant was made in, if any, carried along every rotation. */
  sessionId: string | undefined;
  /**
   * The DPoP key (RFC 7638 thumbprint) a public client's family is bound to (RFC 9449 §5): a
   * refresh needs a proof by that key. Carried along every rotation; undefined when unbound.
   */
  dpopJkt: string | undefined;
  /** The claims the authorization request asked for by name (OIDC `claims`), carried along every rotation. */
  claims: RequestedClaims | undefined;
  /** The jti of the access token handed out with this refresh token: revoked if a retry replaces this token unused. */
  accessTokenJti: string | undefined;
}

/** A live refresh-token family as "Devices and apps" and `sessions list` show it. */
export interface RefreshFamilySummary {
  familyId: string;
  userId: string;
  clientId: string;
  scope: string;
  audience: string;
  /** The first token's createdAt: when the grant was made. */
  createdAt: number;
  /** The newest token's createdAt: every use of a refresh token rotates it. */
  lastUsedAt: number;
  /** The live token's expiresAt. */
  expiresAt: number;
  approvedIp: string | undefined;
  approvedUserAgent: string | undefined;
  sessionId: string | undefined;
}

export type EmailTokenPurpose = 'password_reset' | 'email_verification' | 'factor_enrolment';

/**
 * A one-time link: sent by email (password reset, email verification), or handed over by an
 * administrator (factor enrolment). Stored only as the SHA-256 of its secret.
 */
export interface EmailTokenRecord {
  tokenHash: string;
  userId: string;
  purpose: EmailTokenPurpose;
  /** The address it was sent to (the account's, when made for an enrolment): a verification counts only while the user's email is still this one. */
  email: string;
  createdAt: number;
  expiresAt: number;
  usedAt: number | undefined;
}

/** Why a reuse within the grace window (or a retry within the retry window) was not granted a fresh pair. */
export type GraceRefusal = 'limit' | 'successor_used' | 'revoked';

/**
 * Why a device code presented again after its redemption did not recover the lost answer: it was
 * not redeemed with tokens, too long ago, too often, what it handed out has been used, or the
 * redemption was DPoP-bound and this poll's proof (if any) is by another key.
 */
export type DeviceRecoveryRefusal = 'not_redeemed' | 'too_late' | 'too_soon' | 'limit' | 'used' | 'wrong_key';

/**
 * The longest an access token lives (LATCHKEY_ACCESS_TOKEN_TTL's maximum): a revocation the store
 * records by itself keeps its row this long, since the store does not know the configured lifetime.
 */
export const maxAccessTokenLifetime = 365 * 86400;

/**
 * A device's replacement refresh token as it joins the family of the one it replaces (see
 * recoverDeviceGrant): that family, with the replaced token as its parent, within its end.
 */
export function joinedFamily(token: RefreshTokenRecord, familyId: string, parentId: string, familyExpiresAt: number): RefreshTokenRecord {
  return { ...token, familyId, parentId, familyExpiresAt, expiresAt: Math.min(token.expiresAt, familyExpiresAt) };
}

/**
 * "Only if the user's tokens have not been revoked since I read the user": what the user's
 * tokensRevokedAt was when the caller checked the person. A sign-in or a token issuance racing a
 * new password (or revoke-tokens) then cannot leave a live session or refresh family behind.
 */
export interface UserRevocationGuard {
  userTokensRevokedAt: number | undefined;
}

/** The issuer a server started with, and when (epoch seconds). */
export interface RecordedIssuer {
  issuer: string;
  recordedAt: number;
}

/** A server secret as stored, for re-encryption under a new key (see resealSecrets). */
export interface SealedSecret {
  /** Where it lives, e.g. "signing_key:<kid>" or "server_secret:<name>": bound into the encryption. */
  context: string;
  value: string;
}

export type PromptValue = 'none' | 'login' | 'consent';

/** A validated authorization request (RFC 6749 §4.1.1, OIDC Core §3.1.2.1), kept while the person acts. */
export interface AuthorizationRequest {
  clientId: string;
  redirectUri: string;
  scope: string;
  audience: string;
  state: string;
  nonce: string | undefined;
  codeChallenge: string | undefined;
  prompt: PromptValue[];
  /** `urn:latchkey:mfa` when the client asked for a second factor (acr_values); absent otherwise. */
  acrValues?: string | undefined;
  /** `form_post` when the answer goes back as a self-posting form; absent: in the redirect's query. */
  responseMode?: 'form_post' | undefined;
  /** RFC 9449 §10: the thumbprint of the DPoP key the code will be bound to. */
  dpopJkt?: string | undefined;
  /** The claims asked for by name with the OIDC `claims` parameter. */
  claims?: RequestedClaims | undefined;
  /** OIDC ui_locales as the client sent it (space-separated BCP 47 tags): the pages' language. */
  uiLocales?: string | undefined;
  /** OIDC login_hint: pre-fills the sign-in form. */
  loginHint?: string | undefined;
}

export interface ConsentRecord {
  userId: string;
  clientId: string;
  audience: string;
  scope: string;
  grantedAt: number;
}

export interface AuthorizationCodeRecord {
  codeHash: string;
  clientId: string;
  userId: string;
  redirectUri: string;
  scope: string;
  audience: string;
  nonce: string | undefined;
  codeChallenge: string | undefined;
  authTime: number;
  amr: AuthMethod[];
  createdAt: number;
  expiresAt: number;
  consumedAt: number | undefined;
  /** What the redemption issued, so that a replay can revoke it. */
  accessTokenJti: string | undefined;
  refreshFamilyId: string | undefined;
  /** The browser the person approved from (address, User-Agent), for "Devices and apps". */
  approvedIp: string | undefined;
  approvedUserAgent: string | undefined;
  /** The session (public id) the code was issued in: `sid`. */
  sessionId: string | undefined;
  /** RFC 9449 §10: the DPoP key the code is bound to (`dpop_jkt`, or the proof at PAR): redeemed only with a proof by it. */
  dpopJkt: string | undefined;
  /** The OIDC `claims` request parameter of the authorization request, if it named any claim. */
  claims: RequestedClaims | undefined;
}

/** A person's TOTP app (RFC 6238). */
export interface TotpRecord {
  userId: string;
  /** The base32 secret, sealed (crypto/secret_box.ts, context `totp:<userId>`). */
  secret: string;
  /** The latest time step whose code was accepted: a code of that step or earlier is refused (replay). */
  lastStep: number;
  createdAt: number;
}

/** A registered WebAuthn credential (passkey). */
export interface PasskeyRecord {
  /** The credential id, base64url. Unique across all users. */
  id: string;
  userId: string;
  /** The COSE public key, base64url. */
  publicKey: string;
  /** The signature counter last seen (0 for authenticators that keep none, as synced passkeys). */
  counter: number;
  /** As the browser reported them ("internal", "usb", "hybrid", …). */
  transports: string[];
  /** The person's name for it ("MacBook Touch ID"). */
  name: string;
  /** Synced to the person's other devices (the authenticator's backup state). */
  backedUp: boolean;
  createdAt: number;
  lastUsedAt: number | undefined;
}

/** A rate-limit counter as stored: events since `startedAt`, the latest at `lastAt` (epoch seconds). */
export interface RateLimitCounter {
  count: number;
  startedAt: number;
  lastAt: number;
}

/** A unique key (username, client_id, user code …) already exists. */
export class DuplicateError extends Error {
  constructor(what: string) {
    super(`${what} already exists`);
    this.name = 'DuplicateError';
  }
}

/**
 * What a record names is gone: an API, a client or a role removed while the caller was writing a
 * grant or a permission of it (createRole, updateRole, saveClientGrant). Nothing was written.
 */
export class MissingReferenceError extends Error {
  constructor(what: string) {
    super(`${what} refers to something that no longer exists`);
    this.name = 'MissingReferenceError';
  }
}

/** A pushed authorization request (RFC 9126 §2), kept until its request_uri is used or expires. */
export interface PushedRequestRecord {
  /** SHA-256 of the random part of the request_uri; the URI itself is only in the answer to the client. */
  requestHash: string;
  /** The client that pushed it, authenticated as at the token endpoint. */
  clientId: string;
  /** The authorization request's parameters as pushed (single values; client authentication removed). */
  parameters: Record<string, string>;
  createdAt: number;
  expiresAt: number;
  /** When /authorize redeemed it (single use); undefined before. */
  usedAt: number | undefined;
}

/** How many rows of each kind purgeExpired removed. */
export type PurgeCounts = Record<
  | 'authorizationCodes'
  | 'deviceGrants'
  | 'sessions'
  | 'refreshTokens'
  | 'revokedAccessTokens'
  | 'emailTokens'
  | 'usedOnce'
  | 'registrationTokens'
  | 'pushedRequests',
  number
>;

/**
 * One step of `latchkey config apply`: an API, role, client or connector the configuration file
 * creates, replaces (update: the record as the file declares it, the fields the file does not
 * govern carried over from the stored one) or deletes (prune). applyConfiguration runs a list of
 * them in one transaction: all of them or none.
 */
export type ConfigurationChange =
  | { kind: 'create'; object: 'api'; record: ApiRecord }
  | { kind: 'update'; object: 'api'; record: ApiRecord }
  | { kind: 'delete'; object: 'api'; id: string }
  | { kind: 'create'; object: 'role'; record: Omit<RoleRecord, 'members' | 'builtIn'> }
  | { kind: 'update'; object: 'role'; record: Omit<RoleRecord, 'members' | 'builtIn' | 'createdAt'> }
  | { kind: 'delete'; object: 'role'; id: string }
  /** `grants`: the client's whole set of client_credentials grants (client_grants), replacing what it had. */
  | { kind: 'create'; object: 'client'; record: ClientRecord; grants: ClientGrantRecord[] }
  | { kind: 'update'; object: 'client'; record: ClientRecord; grants: ClientGrantRecord[] }
  /** `now`: when the removal is remembered (removeClient): tokens of a later client of the same id are refused. */
  | { kind: 'delete'; object: 'client'; id: string; now: number }
  | { kind: 'create'; object: 'connector'; record: Omit<ConnectorRecord, 'position'> }
  | { kind: 'update'; object: 'connector'; record: Omit<ConnectorRecord, 'position' | 'createdAt'> }
  | { kind: 'delete'; object: 'connector'; id: string };

export interface Store {
  /**
   * Whether several server instances share this store (PostgreSQL): rate-limit counters then live
   * in it so that limits hold across instances. A SQLite file serves one machine; it counts in memory.
   */
  readonly sharedAcrossInstances: boolean;
  /** Opened for reading only (a listing command on an existing SQLite file): no verb that writes may be called. */
  readonly readOnly?: boolean;
  /** Problems with who may read the store's files, for the server to warn about at start. */
  readonly permissionWarnings?: readonly string[];
  /** What opening did to an older SQLite file's vacuum mode (see SqliteStore), for the server to log. */
  readonly vacuumConversion?: 'not_needed' | 'converted' | 'postponed' | 'busy';
  /** What the migrations did when the store opened (schema version before and after, what ran), for the start log. */
  readonly migrationRun: MigrationRun;

  ping(): Promise<boolean>;
  /**
   * Whether the database takes writes now: false once a write failed for want of storage (disk
   * full, I/O error, read-only) until a small write probe commits again. Answered from memory while
   * no such fault was seen; for the readiness check.
   */
  writesAccepted(): Promise<boolean>;
  /**
   * The database server's clock (epoch seconds). Admin commands may run on any machine: revocation
   * marks are set no earlier than this, so a command on a machine whose clock is behind cannot let
   * tokens issued meanwhile by the servers survive.
   */
  databaseTime(): Promise<number>;
  /**
   * Removes what can no longer matter at `now`: expired sessions, interactions and revoked-token
   * entries at once; codes, device grants and refresh tokens a day after they expired (so that for
   * a while a late poll still hears expired_token and a replay is still recognised). At most
   * `batchSize` rows of each kind per call (all when omitted), so a caller can purge a large
   * backlog in short steps.
   */
  purgeExpired(now: number, batchSize?: number): Promise<PurgeCounts>;
  close(): Promise<void>;

  countUsers(): Promise<number>;
  /** Throws DuplicateError when the username (case-insensitive) is taken. */
  createUser(user: UserRecord): Promise<void>;
  findUserById(id: string): Promise<UserRecord | undefined>;
  findUserByUsername(username: string): Promise<UserRecord | undefined>;
  listUsers(): Promise<UserRecord[]>;
  /** Users whose email is this one, compared without regard to ASCII case. */
  findUsersByEmail(email: string): Promise<UserRecord[]>;
  /**
   * Returns false when there is no such user. Disabling also ends everything the user holds, as
   * revokeUserTokens does, so enabling again brings none of it back.
   */
  setUserDisabled(username: string, disabled: boolean, now: number): Promise<boolean>;
  /** Also ends everything the user holds, as revokeUserTokens does. Returns false when there is no such user. */
  setUserPassword(username: string, passwordHash: string, now: number): Promise<boolean>;
  /**
   * Ends everything a user holds, in one step (RFC 6819 §5.2.2.3): browser sessions, every refresh
   * family (revoked, so their access tokens are refused too), and access tokens, codes and device
   * approvals issued at or before `now` (tokensRevokedAt). Returns false when there is no such user.
   */
  revokeUserTokens(username: string, now: number): Promise<boolean>;
  /**
   * Removes the user (username compared as findUserByUsername does): everything they hold ends
   * first, as revokeUserTokens does, then the record goes with their sessions, refresh tokens,
   * identities, second factors and role grants. The user as it was, or undefined when there is none.
   */
  removeUser(username: string, now: number): Promise<UserRecord | undefined>;

  /** Throws DuplicateError when the client_id is taken. */
  createClient(client: NewRecord<ClientRecord>): Promise<void>;
  /** Inserts the client unless one with its client_id exists (built-in clients at start). */
  ensureClient(client: NewRecord<ClientRecord>): Promise<void>;
  findClient(clientId: string): Promise<ClientRecord | undefined>;
  listClients(): Promise<ClientRecord[]>;
  /**
   * Every origin registered for an enabled client (webOrigins), each once, in byte order: what a
   * CORS preflight, which names no client, is answered for.
   */
  listWebOrigins(): Promise<string[]>;
  /**
   * Removes the client and everything issued to it, and remembers when: a client registered again
   * under the same id gets tokensRevokedAt, so it inherits no token; it is also taken off every
   * API's introspection clients. False when there is no such client.
   */
  removeClient(clientId: string, now: number): Promise<boolean>;

  /** Throws DuplicateError when the id is taken. The new connector comes last in the order. */
  createConnector(connector: NewRecord<Omit<ConnectorRecord, 'position'>>): Promise<void>;
  findConnector(id: string): Promise<ConnectorRecord | undefined>;
  /** In their order (position). */
  listConnectors(): Promise<ConnectorRecord[]>;
  /** Removes it and the identities bound through it (the users stay). False when there is none. */
  removeConnector(id: string): Promise<boolean>;

  findIdentity(connectorId: string, subject: string): Promise<UserIdentityRecord | undefined>;
  /**
   * A first upstream sign-in: the user and its identity in one step, or neither. Throws
   * DuplicateError naming `user` when the username is taken (the caller tries another), or
   * `identity` when that upstream identity is already bound (a racing first sign-in).
   */
  createUserWithIdentity(user: UserRecord, identity: UserIdentityRecord): Promise<void>;
  /** Binds an upstream identity to an existing user. Throws DuplicateError when it is bound already. */
  linkIdentity(identity: UserIdentityRecord): Promise<void>;
  /**
   * A sign-in through the identity: records when, and refreshes the user as `update` says, in one
   * step. False (nothing changed) when the identity is no longer bound (removed meanwhile).
   */
  recordUpstreamSignIn(connectorId: string, subject: string, now: number, update: UpstreamProfileUpdate): Promise<boolean>;
  /**
   * The upstream identities bound to a user, or (undefined) to every user, oldest first
   * (createdAt, then connectorId, then subject).
   */
  listIdentities(userId: string | undefined): Promise<UserIdentityRecord[]>;
  /**
   * Removes every identity of `connectorId` bound to the user, in one step with what goes with it:
   * each is remembered as removed (see RemovedIdentityRecord), and everything the user holds ends
   * as revokeUserTokens does (whoever signed in through the identity is signed out; which sign-in
   * came through which connector is not recorded). With `anotherWayIn`, only while the user keeps
   * another way to sign in: otherwise nothing changes and the answer is 'last_way_in'. Returns the
   * identities removed ([] when there were none).
   */
  unlinkIdentity(userId: string, connectorId: string, now: number, anotherWayIn?: AnotherWayIn): Promise<UserIdentityRecord[] | 'last_way_in'>;
  /** The removal of this upstream identity, if it was removed (and not allowed again since). */
  findRemovedIdentity(connectorId: string, subject: string): Promise<RemovedIdentityRecord | undefined>;
  /** The identities removed from the user, most recent first (removedAt, then connectorId, then subject). */
  listRemovedIdentities(userId: string): Promise<RemovedIdentityRecord[]>;
  /**
   * Lets the user's removed identities of `connectorId` sign in again (a next sign-in through one
   * may link it again by email, or make a user). Returns how many were allowed.
   */
  allowRemovedIdentity(userId: string, connectorId: string): Promise<number>;

  createApi(api: NewRecord<ApiRecord>): Promise<void>;
  findApi(identifier: string): Promise<ApiRecord | undefined>;
  listApis(): Promise<ApiRecord[]>;
  /**
   * Replaces the API's name, scopes and introspection clients (not managedBy: setManagedBy). Returns
   * false when there is no such API.
   */
  updateApi(api: NewRecord<ApiRecord>): Promise<boolean>;
  /** Also removes the role permissions and client grants of the API. */
  removeApi(identifier: string): Promise<boolean>;

  listSigningKeys(): Promise<SigningKeyRecord[]>;
  /** Inserts `key` unless an active key of the same algorithm exists (several processes may start at once). */
  ensureSigningKey(key: Omit<SigningKeyRecord, 'retiredAt'>): Promise<void>;
  /** Retires every active key at `now` and makes `keys` (one per algorithm) the active ones, in one step. */
  rotateSigningKeys(keys: Omit<SigningKeyRecord, 'retiredAt'>[], now: number): Promise<void>;
  /** A value that changes whenever a key is added or retired (cheap: for noticing rotations). */
  signingKeysFingerprint(): Promise<string>;

  /**
   * A server-wide secret by name, created by `generate` on first use (shared by all processes). The
   * value is stored as given: callers hand in and get back the encrypted form (crypto/secret_box.ts).
   */
  serverSecret(name: string, generate: () => string): Promise<string>;
  /** A server-wide secret by name as stored, or undefined: never creates one. */
  findServerSecret(name: string): Promise<string | undefined>;
  /** Removes a server-wide secret (one kept only until it is used); whether there was one. */
  removeServerSecret(name: string): Promise<boolean>;
  /** Records the issuer a starting server runs with (the newest start wins), for the admin commands. */
  recordIssuer(issuer: string, now: number): Promise<void>;
  /** The issuer the server last started with, or undefined before any start recorded one. */
  recordedIssuer(): Promise<RecordedIssuer | undefined>;
  /**
   * Re-encrypts every stored server secret (signing keys' private keys, server secrets, connector
   * secrets, TOTP secrets with context `totp:<userId>`) in one
   * transaction: `reseal` gets each value with its context and returns the new value (or the same).
   * Returns how many values changed.
   */
  resealSecrets(reseal: (secret: SealedSecret) => string): Promise<number>;
  /**
   * What tells whether the configured keys belong to this database, without reading every
   * secret: every stored secret that is in the clear, and one sealed secret for each key that
   * sealed any (the "lk1.<key id>." prefix), over the same places resealSecrets covers.
   */
  sampleStoredSecrets(): Promise<SealedSecret[]>;
  /**
   * After secrets stored in the clear were replaced: makes sure their old bytes are gone from the
   * database's files (SQLite: freed space zeroed and the WAL truncated; PostgreSQL: the two small
   * tables rewritten).
   */
  scrubFreedSpace(): Promise<void>;

  /**
   * Stores the session; with a guard, only while the user's tokensRevokedAt is still what the
   * caller read (else nothing is stored and the answer is false).
   */
  createSession(session: SessionRecord, guard?: UserRevocationGuard): Promise<boolean>;
  /** The session if it exists and has not expired at `now`. */
  findSession(idHash: string, now: number): Promise<SessionRecord | undefined>;
  deleteSession(idHash: string): Promise<void>;
  /** Unexpired sessions at `now`, of one user or (undefined) of everyone, newest first (createdAt, then id). */
  listSessions(userId: string | undefined, now: number): Promise<SessionRecord[]>;
  /** Ends the session with this public id — only if it is `userId`'s, when given. The ended session, or undefined. */
  endSessionById(id: string, userId: string | undefined): Promise<SessionRecord | undefined>;
  /** Records a request seen with the session at `now`, only when the last one recorded is older than `every` seconds (or none). */
  touchSession(idHash: string, now: number, every: number): Promise<void>;
  /**
   * Ends every session and refresh family of the user but the session `keepIdHash`, without
   * touching tokensRevokedAt (access tokens run out on their own): a password change that keeps
   * this browser signed in. Returns how many of each it ended.
   */
  endOtherSignIns(userId: string, keepIdHash: string, now: number): Promise<{ sessions: number; refreshFamilies: number }>;

  /** Throws DuplicateError when the device code or user code collides with a stored one. */
  createDeviceGrant(grant: DeviceGrantRecord): Promise<void>;
  findDeviceGrantByDeviceCode(deviceCodeHash: string): Promise<DeviceGrantRecord | undefined>;
  findDeviceGrantByUserCode(userCodeHash: string): Promise<DeviceGrantRecord | undefined>;
  /**
   * One poll of a device code by `clientId` at `polledAtMs`, as one atomic step: the poll time and
   * the interval it leads to (`nextInterval` is given the grant as it was before this poll) are
   * stored together. Returns the grant as it was before the poll; a code of another client, or a
   * grant no longer pending (whose polls the interval no longer governs), is returned untouched,
   * and an unknown code is undefined.
   */
  pollDeviceGrant(
    deviceCodeHash: string,
    clientId: string,
    polledAtMs: number,
    nextInterval: (before: DeviceGrantRecord) => number,
  ): Promise<DeviceGrantRecord | undefined>;
  /** pending → approved (recording who, when they signed in and how), only while pending and unexpired at `now`. */
  approveDeviceGrant(id: string, userId: string, authTime: number, amr: AuthMethod[], now: number): Promise<boolean>;
  /** pending → denied, only while pending and unexpired at `now`. */
  denyDeviceGrant(id: string, now: number): Promise<boolean>;
  /** approved → consumed, atomically; the grant for the single caller that won, else undefined. */
  consumeDeviceGrant(id: string, now: number): Promise<DeviceGrantRecord | undefined>;
  /**
   * The device flow's one write when tokens are handed out: approved → consumed (as
   * consumeDeviceGrant) and, in the same transaction, the refresh token the tokens start, when
   * there is one. The single caller that won gets the grant; a refresh token is stored only while
   * the user's tokensRevokedAt is still what `refresh.guard` says (refreshTokenStored false
   * otherwise, the grant spent all the same). A crash leaves either both or neither.
   */
  redeemDeviceGrant(
    id: string,
    now: number,
    refresh?: { token: RefreshTokenRecord; guard: UserRevocationGuard },
    /**
     * Kept with the grant (with the refresh family) for recoverDeviceGrant: the jti of the access
     * token being handed out, and the DPoP key the redeeming poll proved, if any.
     */
    issued?: { accessTokenJti?: string | undefined; dpopJkt?: string | undefined },
  ): Promise<{ grant: DeviceGrantRecord; refreshTokenStored: boolean } | undefined>;
  /**
   * A device whose token answer was lost presents its device code again: in one step, if grant
   * `id` was redeemed with tokens at or after `since`, its latest tokens were handed out at least
   * `minGapSeconds` before `now` (recoveries racing each other take turns, and the later ones are
   * refused), it had fewer than `limit` recoveries, the redemption had no DPoP key or `dpopJkt`
   * (this poll's) is that key, and the refresh family it started (if any) was
   * never used nor revoked: the family's live token is superseded and `replacement`'s refresh token
   * joins the family in its place (so the lost token, presented later, is reuse and revokes the
   * family), the lost access token is revoked, and the grant records the new access token. The
   * grant, or why not.
   */
  recoverDeviceGrant(
    id: string,
    bounds: { since: number; now: number; minGapSeconds: number; limit: number; dpopJkt: string | undefined },
    replacement: { accessTokenJti: string; refresh?: { token: RefreshTokenRecord; guard: UserRevocationGuard } },
  ): Promise<{ grant: DeviceGrantRecord; refreshTokenStored: boolean } | DeviceRecoveryRefusal>;

  /** Stores the token; with a guard, only while the user's tokensRevokedAt is still what the caller read. */
  createRefreshToken(token: RefreshTokenRecord, guard?: UserRevocationGuard): Promise<boolean>;
  /** The token in whatever state it is (live, rotated, revoked, expired), or undefined. */
  findRefreshToken(tokenHash: string): Promise<RefreshTokenRecord | undefined>;
  /**
   * Rotation as one conditional step: marks token `id` rotated at `now` only if it is neither
   * rotated, revoked nor superseded, and inserts `successor` (whose parentId is `id`). Its
   * siblings (the other answers of a race for its parent) are left live. Returns false (and
   * inserts nothing) when another rotation or a revocation got there first.
   */
  rotateRefreshToken(id: string, successor: RefreshTokenRecord, now: number): Promise<boolean>;
  /**
   * A reuse of rotated token `id` within the grace window, as one conditional step: inserts
   * `successor` only while the family is not revoked, `id` is not superseded, fewer than
   * `bounds.limit` grace successors were handed out for `id`, and none of its successors has been
   * used yet. The family then keeps at most `bounds.liveBranches` live tokens (unexpired at
   * `bounds.now`): past it, the live tokens of other branches created longest ago are superseded,
   * never a successor of `id`. Returns true, or why not.
   */
  addGraceSuccessor(id: string, successor: RefreshTokenRecord, bounds: { limit: number; liveBranches: number; now: number }): Promise<true | GraceRefusal>;
  /**
   * A rotated token `id` presented again after the grace window, by a client whose answer was
   * lost: as one conditional step, only while the family is not revoked, `id` is not superseded,
   * none of its successors has been used and it had fewer than `limit` retries, supersedes every
   * unused successor of `id` created more than `raceSeconds` ago (and revokes the access tokens
   * they were handed out with) and inserts `successor`. Successors younger than that are kept
   * beside it: retries racing each other (the processes of one CLI after an outage) are siblings
   * that each go on, as in the grace window. Returns true, or why not.
   */
  retryRotation(id: string, successor: RefreshTokenRecord, now: number, limit: number, raceSeconds: number): Promise<true | GraceRefusal>;
  isRefreshFamilyRevoked(familyId: string): Promise<boolean>;
  /**
   * Revokes every refresh token of a family (RFC 9700 §4.14, RFC 6749 §4.1.2), and remembers it:
   * a token created in the family afterwards is born revoked.
   */
  revokeRefreshFamily(familyId: string, now: number): Promise<void>;
  /**
   * Live refresh families (with a token neither rotated, revoked nor superseded, unexpired at
   * `now`) of one user or (undefined) of everyone, most recently used first.
   */
  listRefreshFamilies(userId: string | undefined, now: number): Promise<RefreshFamilySummary[]>;
  /**
   * Revokes the family as revokeRefreshFamily does — only if it is live at `now` and, when `userId`
   * is given, that user's. Its summary as it was, or undefined.
   */
  revokeRefreshFamilyOf(familyId: string, userId: string | undefined, now: number): Promise<RefreshFamilySummary | undefined>;

  /** Remembers a revoked access token's jti until the token would have expired. */
  revokeAccessToken(jti: string, expiresAt: number): Promise<void>;
  isAccessTokenRevoked(jti: string): Promise<boolean>;

  findConsent(userId: string, clientId: string, audience: string): Promise<ConsentRecord | undefined>;
  /** Inserts or replaces the consent of (user, client, audience). */
  saveConsent(consent: ConsentRecord): Promise<void>;
  /** The clients an authorization code was issued to in this session (its public id), sorted: who to tell when it ends. */
  clientsOfSession(sessionId: string): Promise<string[]>;
  /** The user's consents, most recent first (grantedAt, then clientId, then audience). */
  listConsents(userId: string): Promise<ConsentRecord[]>;
  /**
   * Withdraws every consent of (user, client) and revokes the user's refresh families of that
   * client, in one step. Returns how many consents were removed (0: nothing changed).
   */
  withdrawConsent(userId: string, clientId: string, now: number): Promise<number>;

  /** Name and email as the person set them; a changed email (compared case-insensitively) is no longer verified. False when there is no such user. */
  updateUserProfile(userId: string, profile: { name: string | undefined; email: string }, now: number): Promise<boolean>;
  /**
   * An operator's change (`latchkey users update`): each member given replaces the stored value
   * (`name: null` clears the name; `profile` replaces the whole set of profile claims), and
   * updatedAt becomes `now`. A changed email (compared case-insensitively) stays verified, as an
   * operator's entry. False when there is no such user.
   */
  updateUser(username: string, change: { email?: string; name?: string | null; profile?: UserProfileClaims }, now: number): Promise<boolean>;
  /** A new password hash without ending anything (the person chose to keep their other sign-ins). False when there is no such user. */
  updateUserPassword(userId: string, passwordHash: string): Promise<boolean>;
  /**
   * The same password stored the current way (a rehash at sign-in): replaces the hash only while it
   * is still `expectedHash`, in one compare-and-set, so that a password changed meanwhile is never
   * overwritten by the old one; ends nothing, and leaves updatedAt alone (the person changed
   * nothing). False when the hash is no longer `expectedHash`, or there is no such user.
   */
  upgradePasswordHash(userId: string, expectedHash: string, passwordHash: string): Promise<boolean>;

  createEmailToken(token: EmailTokenRecord): Promise<void>;
  /** The token while it is unused, unexpired at `now` and of this purpose, spending nothing (a form that shows before it spends); else undefined. */
  findEmailToken(tokenHash: string, purpose: EmailTokenPurpose, now: number): Promise<EmailTokenRecord | undefined>;
  /**
   * Spends the token atomically: the record for the single caller that won, while unused and
   * unexpired at `now` and of this purpose; else undefined.
   */
  useEmailToken(tokenHash: string, purpose: EmailTokenPurpose, now: number): Promise<EmailTokenRecord | undefined>;
  /** Marks the user's email verified if it still is `email` (case-insensitive). False otherwise. */
  markEmailVerified(userId: string, email: string): Promise<boolean>;
  /** Unused, unexpired email tokens of the user and purpose created after `since` (a per-account limit). */
  countEmailTokens(userId: string, purpose: EmailTokenPurpose, since: number): Promise<number>;
  /**
   * Spends, at `now`, every unused and unexpired token of the user and purpose, so that none of
   * them works any more (a new enrolment link replaces the older ones). Returns how many.
   */
  cancelEmailTokens(userId: string, purpose: EmailTokenPurpose, now: number): Promise<number>;

  createAuthorizationCode(code: AuthorizationCodeRecord): Promise<void>;
  findAuthorizationCode(codeHash: string): Promise<AuthorizationCodeRecord | undefined>;
  /**
   * Marks the code used, atomically, recording what its redemption issues; the code for the
   * single caller that won, or undefined when it was already used or has expired.
   */
  consumeAuthorizationCode(
    codeHash: string,
    now: number,
    issued: { accessTokenJti: string; refreshFamilyId: string },
  ): Promise<AuthorizationCodeRecord | undefined>;

  findTotp(userId: string): Promise<TotpRecord | undefined>;
  /** Inserts the user's TOTP, or replaces the one they had. */
  saveTotp(totp: TotpRecord): Promise<void>;
  /**
   * Accepts the code of time step `step`, atomically: only if `step` is later than the last step
   * accepted (which it becomes). False for a replay, an older step, or no TOTP.
   */
  useTotpStep(userId: string, step: number): Promise<boolean>;
  /** False when the user had none. */
  removeTotp(userId: string): Promise<boolean>;

  /** Throws DuplicateError when the credential id is registered already (to anyone). */
  createPasskey(passkey: PasskeyRecord): Promise<void>;
  findPasskey(id: string): Promise<PasskeyRecord | undefined>;
  /** The user's passkeys, oldest first (createdAt, then id). */
  listPasskeys(userId: string): Promise<PasskeyRecord[]>;
  /**
   * After an assertion: the counter it carried and when, atomically and only forward — a counter
   * above the stored one, or 0 where 0 is stored (authenticators that keep none). False when the
   * passkey is gone or the counter is not ahead (a parallel assertion got there first: a clone).
   */
  recordPasskeyUse(id: string, counter: number, now: number): Promise<boolean>;
  /** False when the user has no passkey of that id. */
  renamePasskey(userId: string, id: string, name: string): Promise<boolean>;
  /** False when the user has no passkey of that id. */
  removePasskey(userId: string, id: string): Promise<boolean>;

  /** Replaces every recovery code of the user by these (digests of the codes, all unused), in one step. */
  replaceRecoveryCodes(userId: string, codeHashes: string[], now: number): Promise<void>;
  /** Spends a recovery code, atomically: false when it is not one of the user's unused codes. */
  useRecoveryCode(userId: string, codeHash: string, now: number): Promise<boolean>;
  /** How many unused recovery codes the user has. */
  countRecoveryCodes(userId: string): Promise<number>;
  /** Removes the user's TOTP, passkeys and recovery codes in one step. Whether there was any. */
  resetSecondFactors(userId: string): Promise<boolean>;

  /**
   * Counts one event in a fixed window, atomically across every process on the store: a counter
   * whose window (`windowSeconds` from its start) has ended starts again at 1 from `now`.
   */
  countRateLimitEvent(bucket: string, key: string, now: number, windowSeconds: number): Promise<RateLimitCounter>;
  /**
   * Counts one failure in a run of failures: a counter whose latest event is `forgetAfterSeconds`
   * or more before `now` starts again at 1. For these counters `startedAt` is the time of the
   * failure before the latest (`now` for the first), so one atomic step tells what the wait was.
   */
  countRateLimitFailure(bucket: string, key: string, now: number, forgetAfterSeconds: number): Promise<RateLimitCounter>;
  readRateLimitCounter(bucket: string, key: string): Promise<RateLimitCounter | undefined>;
  /**
   * Takes one event back (one counted up front that then did not count); a counter at 0 is removed.
   * `lastAt`, when given, becomes the counter's latest time again (a refused attempt leaves no trace).
   */
  undoRateLimitEvent(bucket: string, key: string, lastAt?: number): Promise<void>;
  clearRateLimitCounter(bucket: string, key: string): Promise<void>;

  /**
   * Gives the space of purged rows back to the file system where the store can (SQLite's
   * incremental vacuum, a bounded number of pages per call); a no-op where the database manages
   * it (PostgreSQL's autovacuum). Returns how many pages were released.
   */
  reclaimSpace(maxPages?: number): Promise<number>;

  // --- Roles, API permissions, machine clients ---

  /**
   * Throws DuplicateError when a role of that name exists, MissingReferenceError when a permission
   * names an API that does not exist. `members` and `builtIn` are ignored; no groups when `groups` is not given.
   */
  createRole(role: NewRole): Promise<void>;
  findRole(name: string): Promise<RoleRecord | undefined>;
  /** Sorted by name. */
  listRoles(): Promise<RoleRecord[]>;
  /**
   * Replaces the role's permissions, and its description and groups when given. False when there is
   * no such role.
   */
  updateRole(name: string, changes: RoleChanges): Promise<boolean>;
  /** Removes a role and every grant of it. False when there is none or it is built in. */
  removeRole(name: string): Promise<boolean>;
  /**
   * Gives the user the role by hand, a direct grant (idempotent: true when they now hold it). False
   * when user or role does not exist.
   */
  grantRole(userId: string, role: string, now: number): Promise<boolean>;
  /**
   * Takes back the direct grant of the role; a hold of it through an upstream group stays (the next
   * upstream sign-in decides it). False when the user held no direct grant of it.
   */
  revokeRole(userId: string, role: string): Promise<boolean>;
  /**
   * Replaces exactly the user's roles held through upstream groups by `roles` (an upstream sign-in
   * computed them from the person's groups); direct grants are untouched, and a role that does not
   * exist (removed meanwhile) is skipped. Returns the roles gained and lost through groups, sorted.
   * False when there is no such user.
   */
  setGroupRoles(userId: string, roles: string[], now: number): Promise<GroupRolesChange | false>;
  /** The user's roles by how they hold them, each list sorted: granted by hand, and through upstream groups. */
  listUserRoleSources(userId: string): Promise<{ direct: string[]; group: string[] }>;
  /** Users holding the role (either way), sorted by username. */
  listRoleMembers(role: string): Promise<UserRecord[]>;
  /**
   * Marks the object as declared by the configuration file `managedBy` (absolute path), or as no
   * longer managed (undefined). False when there is no such object.
   */
  setManagedBy(kind: ManagedKind, id: string, managedBy: string | undefined): Promise<boolean>;
  /**
   * The scopes of `api` the user's roles give, sorted and distinct (one query: token issuance
   * calls it). Scopes the API no longer declares are the caller's to drop.
   */
  permittedScopes(userId: string, api: string): Promise<string[]>;

  /** Inserts or replaces the grant of (client, api). MissingReferenceError when either does not exist. */
  saveClientGrant(grant: ClientGrantRecord): Promise<void>;
  findClientGrant(clientId: string, api: string): Promise<ClientGrantRecord | undefined>;
  /** The client's grants sorted by api; every client's when clientId is undefined. */
  listClientGrants(clientId: string | undefined): Promise<ClientGrantRecord[]>;
  /** False when there was none. */
  removeClientGrant(clientId: string, api: string): Promise<boolean>;

  /** Changes what is given; false when there is no such client. */
  updateClient(clientId: string, changes: ClientChanges): Promise<boolean>;
  /**
   * A new secret (digest, and a sealed copy for client_secret_jwt or none); the current one becomes the previous, accepted until
   * `keepOldUntil`, or is dropped at once when that is undefined. False when there is no such client.
   */
  rotateClientSecret(clientId: string, secret: { hash: string; sealed: string | undefined }, keepOldUntil: number | undefined): Promise<boolean>;
  /** False when there is no such client. */
  setClientDisabled(clientId: string, disabled: boolean): Promise<boolean>;
  /**
   * Runs the changes in order in one transaction: every one or none (a duplicate, a missing
   * reference or any failure part-way leaves the database as it was, and the error is thrown).
   */
  applyConfiguration(changes: readonly ConfigurationChange[]): Promise<void>;

  /**
   * Remembers `key` under `purpose` until `expiresAt` (epoch seconds): true the first time, false
   * while it is remembered (a replayed client assertion jti, later DPoP proofs), atomically across
   * every process on the store. Forgotten by purgeExpired after expiresAt.
   */
  useOnce(purpose: string, key: string, expiresAt: number): Promise<boolean>;

  /**
   * Takes the lease on `key` for `holder` until `expiresAt` (epoch seconds): true when it was free
   * or its lease had expired by the database's clock, false while another holder's lease runs. One
   * statement, atomic across every process on the store: of two simultaneous takers exactly one wins.
   */
  takeResourceLease(key: string, holder: string, expiresAt: number): Promise<boolean>;
  /** Gives the lease on `key` back, if `holder` still holds it (not when another took it over after expiry). */
  releaseResourceLease(key: string, holder: string): Promise<boolean>;

  /** Appends events in one transaction (the ids are assigned here). */
  appendAuditEvents(events: Omit<AuditEventRecord, 'id'>[]): Promise<void>;
  listAuditEvents(query: AuditEventQuery): Promise<AuditEventRecord[]>;
  /** Removes events older than `before` (epoch ms), at most batchSize (all when omitted). Returns how many. */
  purgeAuditEvents(before: number, batchSize?: number): Promise<number>;

  // --- Dynamic client registration (RFC 7591/7592) ---

  /**
   * Stores an initial access token (its digest); purgeExpired removes it once expired, used or not.
   * Throws DuplicateError when the digest is stored already.
   */
  createRegistrationToken(token: RegistrationTokenRecord): Promise<void>;
  /** The token in whatever state it is (used, expired), or undefined. */
  findRegistrationToken(tokenHash: string): Promise<RegistrationTokenRecord | undefined>;
  /** Spends the token atomically: true for the single caller that won while it was unused and unexpired at `now`. */
  useRegistrationToken(tokenHash: string, now: number): Promise<boolean>;
  /**
   * A registration (RFC 7591) as one step: spends the initial access token as useRegistrationToken
   * does (recording the client it made) and stores `client` with its registration fields. False,
   * with nothing stored, when the token is unknown, used or expired at `now`. Throws DuplicateError
   * (and spends nothing) when the client_id is taken.
   */
  registerClient(client: NewRecord<ClientRecord>, initialTokenHash: string, now: number): Promise<boolean>;
  /** An RFC 7592 update in one step: metadata, registered method and secret. False when there is no such client. */
  updateRegisteredClient(clientId: string, update: RegisteredClientUpdate): Promise<boolean>;

  // --- Pushed authorization requests (RFC 9126) ---

  /**
   * Stores a pushed authorization request (RFC 9126) under the digest of its request_uri's random
   * part; purgeExpired removes it once expired, used or not. Throws DuplicateError when the digest
   * is stored already.
   */
  createPushedRequest(request: PushedRequestRecord): Promise<void>;
  /**
   * Redeems a pushed request atomically: marks it used and returns it to the single caller that
   * won, while it was unused, unexpired at `now` and pushed by `clientId`; undefined for everyone
   * else (unknown, used, expired, another client's — which is left unused).
   */
  usePushedRequest(requestHash: string, clientId: string, now: number): Promise<PushedRequestRecord | undefined>;
}
