/**
 * A fresh app per test: its own :memory: SQLite store opened as the server opens its store (group
 * commit on), a manual clock, logs off. Seeding helpers create users, clients and APIs through the
 * Store, the way the admin commands do.
 */
import { plainClientFields } from '../../src/directory/clients.js';
import { clientSecretContext } from '../../src/oauth/client_secret.js';
import type { SecretBox } from '../../src/crypto/secret_box.js';
import type { FastifyInstance } from 'fastify';
import { createHash, randomBytes, type KeyObject } from 'node:crypto';
import { openSecretBox } from '../../src/crypto/secret_key_file.js';
import { algorithmsInUse, signingKeyContext } from '../../src/crypto/signer.js';
import { generateSigningKey, privateKeyFromPem, publicJwkOf, type SigningAlgorithm } from '../../src/crypto/keys.js';
import { buildApp } from '../../src/app.js';
import { defaultRateLimits } from '../../src/limits/rate_limiters.js';
import { bootstrap } from '../../src/bootstrap.js';
import { manualClock, type ManualClock } from '../../src/clock.js';
import { configFrom, type Config } from '../../src/config.js';
import { hashPassword } from '../../src/crypto/password.js';
import { randomId, randomSecret, secretPrefix, sha256 } from '../../src/crypto/secrets.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite_store.js';
import type { ClientRecord, GrantTypeName, Store, UserRecord } from '../../src/store/store.js';

export interface TestApp {
  app: FastifyInstance;
  store: SqliteStore;
  clock: ManualClock;
  config: Config;
  close(): Promise<void>;
}

export async function testApp(
  env: Record<string, string> = {},
  options: { path?: string; logLines?: string[]; sleep?: (ms: number) => Promise<void> } = {},
): Promise<TestApp> {
  const clock = manualClock();
  // LATCHKEY_DB names the store's file, so that the secret key file lives beside it (or, in
  // memory, the key is this process's own).
  const config = configFrom({
    LATCHKEY_ISSUER: 'http://latchkey.test',
    LATCHKEY_BOOTSTRAP_PASSWORD: 'bootstrap-password',
    LATCHKEY_DB: options.path ?? ':memory:',
    ...env,
  });
  // The server's set-up (store/open.ts, openConfiguredStore with server: true): the verbs of one
  // event-loop turn share a transaction, and background checkpoints run on a file. The routes are
  // tested on the store they run on in production, batching included.
  const store = new SqliteStore({
    path: options.path ?? ':memory:',
    now: Math.floor(clock()),
    groupCommit: true,
    backgroundCheckpoints: true,
    batchReads: config.workers <= 1,
  });
  const secretBox = await openSecretBox(config, store);
  await seedSigningKeys(store, secretBox, config.signingAlg, Math.floor(clock()));
  await bootstrap(store, config, clock, testPasswordHash);
  const lines = options.logLines;
  const app = await buildApp({
    config,
    store,
    clock,
    secretBox,
    rateLimits: defaultRateLimits(config, clock),
    // The sign-in slow-down would make tests wait for real; they see what it asked for instead.
    sleep: options.sleep ?? (async () => undefined),
    ...(lines ? { logStream: { write: (line: string) => void lines.push(line) } } : { logger: false }),
  });
  await app.ready();
  return {
    app,
    store,
    clock,
    config,
    async close() {
      await app.close();
      await store.close();
    },
  };
}

/**
 * Fixtures that are slow to make by design, made once per test process: password hashes
 * (by password; the same parameters and format as production, only not recomputed) and signing
 * key pairs (by algorithm; each app still gets keys of its own id, sealed with its own box).
 * A route test that builds an app and a user then costs milliseconds, not a second.
 */
const passwordHashes = new Map<string, Promise<string>>();

export function testPasswordHash(password: string): Promise<string> {
  let hash = passwordHashes.get(password);
  if (!hash) passwordHashes.set(password, (hash = hashPassword(password)));
  return hash;
}

const keyPairs = new Map<SigningAlgorithm, KeyObject>();

/** What the signer would make on first start, from a key pair of this process (see above). */
async function seedSigningKeys(store: SqliteStore, box: SecretBox, accessTokenAlgorithm: SigningAlgorithm, now: number): Promise<void> {
  for (const alg of algorithmsInUse(accessTokenAlgorithm)) {
    let privateKey = keyPairs.get(alg);
    if (!privateKey) keyPairs.set(alg, (privateKey = privateKeyFromPem(generateSigningKey(alg).privateKeyPem)));
    const kid = randomBytes(12).toString('base64url');
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    await store.ensureSigningKey({
      kid,
      alg,
      privateKeyPem: box.seal(signingKeyContext(kid), pem),
      publicJwk: publicJwkOf(privateKey, kid, alg),
      createdAt: now,
    });
  }
}

export async function addUser(store: Store, username = 'alice', password = 'correct horse battery', extra: Partial<UserRecord> = {}): Promise<UserRecord> {
  const user: UserRecord = {
    id: randomId(),
    username,
    email: `${username}@example.com`,
    name: `${username[0]?.toUpperCase()}${username.slice(1)} Example`,
    passwordHash: await testPasswordHash(password),
    disabled: false,
    createdAt: 1_800_000_000,
    tokensRevokedAt: undefined,
    source: 'local',
    emailVerified: true,
    groups: [],
    roles: [],
    profile: {},
    updatedAt: extra.createdAt ?? 1_800_000_000,
    ...extra,
  };
  await store.createUser(user);
  // Roles given in `extra` are granted as `users grant` would (createUser ignores them).
  for (const role of user.roles) await store.grantRole(user.id, role, 1_800_000_000);
  return user;
}

export async function addClient(
  store: Store,
  clientId: string,
  options: {
    grantTypes?: GrantTypeName[];
    confidential?: boolean;
    name?: string;
    redirectUris?: string[];
    firstParty?: boolean;
    requirePkce?: boolean;
    postLogoutRedirectUris?: string[];
    backchannelLogoutUri?: string;
    /** Seals the secret too (client_secret_jwt needs it): the app's own secret box. */
    secretBox?: SecretBox;
    jwks?: { keys: Record<string, unknown>[] };
    jwksUri?: string;
    /** The client must push its authorization requests (`clients add --require-par`). */
    requirePar?: boolean;
    /** Origins whose browser code may call the server for it (`clients add --web-origin`), in their serialised form. */
    webOrigins?: string[];
  } = {},
): Promise<{ client: ClientRecord; secret: string | undefined }> {
  const secret = options.confidential ? randomSecret(secretPrefix.clientSecret) : undefined;
  const client: ClientRecord = {
    clientId,
    name: options.name ?? `App ${clientId}`,
    secretHash: secret === undefined ? undefined : sha256(secret),
    redirectUris: options.redirectUris ?? [],
    postLogoutRedirectUris: options.postLogoutRedirectUris ?? [],
    webOrigins: options.webOrigins ?? [],
    backchannelLogoutUri: options.backchannelLogoutUri,
    grantTypes: options.grantTypes ?? ['device_code', 'refresh_token'],
    requirePkce: options.requirePkce ?? true,
    firstParty: options.firstParty ?? false,
    builtIn: false,
    createdAt: 1_800_000_000,
    tokensRevokedAt: undefined,
    ...plainClientFields,
    jwks: options.jwks,
    jwksUri: options.jwksUri,
    requirePar: options.requirePar ?? false,
    secretSealed: secret === undefined || options.secretBox === undefined ? undefined : options.secretBox.seal(clientSecretContext(clientId), secret),
  };
  await store.createClient(client);
  return { client, secret };
}

export async function addApi(
  store: Store,
  identifier: string,
  name = 'Example API',
  introspectionClients: string[] = [],
  scopes: string[] = [],
): Promise<void> {
  await store.createApi({ identifier, name, createdAt: 1_800_000_000, introspectionClients, scopes });
}

export const deviceGrantType = 'urn:ietf:params:oauth:grant-type:device_code';

export function form(fields: Record<string, string>): { payload: string; headers: Record<string, string> } {
  return { payload: new URLSearchParams(fields).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } };
}

/** A PKCE pair (RFC 7636): a random verifier and its S256 challenge. */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomSecret();
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}
