/**
 * The Store: every read and write of persistent state, as domain verbs. Each method is one atomic
 * unit and returns a Promise so that a PostgreSQL implementation fits behind the same interface.
 * Nothing outside src/store/ touches SQL. A missing record is `undefined`, never an exception.
 */
import type { PublicJwk, SigningAlgorithm } from '../crypto/keys.js';

export type GrantTypeName = 'authorization_code' | 'device_code' | 'refresh_token';

export interface UserRecord {
  id: string;
  username: string;
  email: string;
  name: string | undefined;
  passwordHash: string;
  disabled: boolean;
  createdAt: number;
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
}

export interface ApiRecord {
  identifier: string;
  name: string;
  createdAt: number;
}

export interface SigningKeyRecord {
  kid: string;
  alg: SigningAlgorithm;
  privateKeyPem: string;
  publicJwk: PublicJwk;
  createdAt: number;
  retiredAt: number | undefined;
}

export interface SessionRecord {
  idHash: string;
  userId: string;
  authTime: number;
  createdAt: number;
  expiresAt: number;
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
  requesterIp: string;
  requesterUserAgent: string;
  createdAt: number;
  expiresAt: number;
  decidedAt: number | undefined;
  consumedAt: number | undefined;
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
  createdAt: number;
  expiresAt: number;
}

/** A unique key (username, client_id, user code …) already exists. */
export class DuplicateError extends Error {
  constructor(what: string) {
    super(`${what} already exists`);
    this.name = 'DuplicateError';
  }
}

export interface Store {
  ping(): Promise<boolean>;
  close(): Promise<void>;

  countUsers(): Promise<number>;
  /** Throws DuplicateError when the username (case-insensitive) is taken. */
  createUser(user: UserRecord): Promise<void>;
  findUserById(id: string): Promise<UserRecord | undefined>;
  findUserByUsername(username: string): Promise<UserRecord | undefined>;
  listUsers(): Promise<UserRecord[]>;
  /** Returns false when there is no such user. */
  setUserDisabled(username: string, disabled: boolean): Promise<boolean>;
  setUserPassword(username: string, passwordHash: string): Promise<boolean>;

  /** Throws DuplicateError when the client_id is taken. */
  createClient(client: ClientRecord): Promise<void>;
  /** Inserts the client unless one with its client_id exists (built-in clients at start). */
  ensureClient(client: ClientRecord): Promise<void>;
  findClient(clientId: string): Promise<ClientRecord | undefined>;
  listClients(): Promise<ClientRecord[]>;
  /** Removes the client and everything issued to it. Returns false when there is no such client. */
  removeClient(clientId: string): Promise<boolean>;

  createApi(api: ApiRecord): Promise<void>;
  findApi(identifier: string): Promise<ApiRecord | undefined>;
  listApis(): Promise<ApiRecord[]>;
  removeApi(identifier: string): Promise<boolean>;

  listSigningKeys(): Promise<SigningKeyRecord[]>;
  /** Inserts `key` only if no active (unretired) key exists: safe when two processes start at once. */
  ensureSigningKey(key: Omit<SigningKeyRecord, 'retiredAt'>): Promise<void>;

  /** A server-wide random secret by name, created by `generate` on first use (shared by all processes). */
  serverSecret(name: string, generate: () => string): Promise<string>;

  createSession(session: SessionRecord): Promise<void>;
  /** The session if it exists and has not expired at `now`. */
  findSession(idHash: string, now: number): Promise<SessionRecord | undefined>;
  deleteSession(idHash: string): Promise<void>;

  /** Throws DuplicateError when the device code or user code collides with a stored one. */
  createDeviceGrant(grant: DeviceGrantRecord): Promise<void>;
  findDeviceGrantByDeviceCode(deviceCodeHash: string): Promise<DeviceGrantRecord | undefined>;
  findDeviceGrantByUserCode(userCodeHash: string): Promise<DeviceGrantRecord | undefined>;
  /**
   * Records a poll at `polledAtMs` and returns the grant as it was just before (so the caller sees
   * the previous poll time), or undefined for an unknown device code.
   */
  recordDevicePoll(deviceCodeHash: string, polledAtMs: number): Promise<DeviceGrantRecord | undefined>;
  /** Sets the poll interval of a still-pending grant. */
  setDeviceInterval(id: string, interval: number): Promise<void>;
  /** pending → approved, only while pending and unexpired at `now`. Returns whether it happened. */
  approveDeviceGrant(id: string, userId: string, authTime: number, now: number): Promise<boolean>;
  /** pending → denied, only while pending and unexpired at `now`. */
  denyDeviceGrant(id: string, now: number): Promise<boolean>;
  /** approved → consumed, atomically; the grant for the single caller that won, else undefined. */
  consumeDeviceGrant(id: string, now: number): Promise<DeviceGrantRecord | undefined>;

  createRefreshToken(token: RefreshTokenRecord): Promise<void>;
  findRefreshToken(tokenHash: string): Promise<RefreshTokenRecord | undefined>;
}
