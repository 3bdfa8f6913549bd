/**
 * What the server makes sure of at start: the built-in `latchkey-cli` client, and on a database
 * with no users, a first user (LATCHKEY_BOOTSTRAP_USER, or `admin` with a random password that is
 * shown once and never logged) holding the `admin` role, so that someone can open the console.
 */
import type { Clock } from './clock.js';
import { epochSeconds } from './clock.js';
import type { Config } from './config.js';
import { hashPassword } from './crypto/password.js';
import { randomUuid, randomString } from './crypto/secrets.js';
import { DuplicateError, type ClientRecord, type Store } from './store/store.js';
import { plainClientFields } from './directory/clients.js';
import { adminRole } from './directory/roles.js';

export const builtinCliClientId = 'latchkey-cli';

export function builtinCliClient(now: number): ClientRecord {
  return {
    clientId: builtinCliClientId,
    name: 'Latchkey CLI',
    secretHash: undefined,
    redirectUris: ['http://127.0.0.1/callback'],
    grantTypes: ['authorization_code', 'device_code', 'refresh_token'],
    requirePkce: true,
    firstParty: true,
    builtIn: true,
    createdAt: now,
    tokensRevokedAt: undefined,
    postLogoutRedirectUris: [],
    webOrigins: [],
    backchannelLogoutUri: undefined,
    ...plainClientFields,
  };
}

export interface BootstrapResult {
  createdUser: string | undefined;
  /** Set only when the password was generated here, so it can be shown once. */
  generatedPassword: string | undefined;
}

const passwordAlphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';

export async function bootstrap(
  store: Store,
  config: Config,
  clock: Clock,
  /** How the first user's password is hashed (tests pass a memoized one: password hashing is slow by design). */
  hash: (password: string) => Promise<string> = hashPassword,
): Promise<BootstrapResult> {
  const now = epochSeconds(clock);
  await store.ensureClient(builtinCliClient(now));
  if ((await store.countUsers()) > 0) return { createdUser: undefined, generatedPassword: undefined };
  const username = config.bootstrapUser ?? 'admin';
  const generated = config.bootstrapPassword === undefined ? randomString(passwordAlphabet, 20) : undefined;
  const id = randomUuid();
  try {
    await store.createUser({
      id,
      username,
      email: username.includes('@') ? username : `${username}@localhost`,
      name: undefined,
      passwordHash: await hash(config.bootstrapPassword ?? generated ?? ''),
      disabled: false,
      createdAt: now,
      tokensRevokedAt: undefined,
      source: 'local',
      // A made-up address (admin@localhost) is nobody's mailbox; one the operator chose counts as theirs.
      emailVerified: username.includes('@'),
      groups: [],
      roles: [],
      profile: {},
      updatedAt: now,
    });
  } catch (err) {
    // Another instance starting on the same empty database made the first user (and showed its password).
    if (err instanceof DuplicateError) return { createdUser: undefined, generatedPassword: undefined };
    throw err;
  }
  await store.grantRole(id, adminRole, now);
  return { createdUser: username, generatedPassword: generated };
}
