/**
 * What the server makes sure of at start: the built-in `latchkey-cli` client, the built-in API
 * `{issuer}/api/v1` of the management API (its scopes held by the `admin` role), and on a database
 * with no users, a first user (LATCHKEY_BOOTSTRAP_USER, or `admin` with a random password) holding
 * the `admin` role, so that someone can open the console.
 *
 * A generated password is kept, sealed with the secret key (never in the clear, never logged), and
 * shown at every start until its user signs in or the password is changed. It is stored before the
 * user is made, so nothing can lose it: a start that made the user and then failed to listen (the
 * port taken), or died before it printed anything, leaves it for the next start to show; two
 * instances starting at once on one database store one password (the first insert wins) and both
 * can show it, whichever of them made the user.
 */
import type { Clock } from './clock.js';
import { epochSeconds } from './clock.js';
import type { Config } from './config.js';
import { hashPassword } from './crypto/password.js';
import { randomUuid, randomString } from './crypto/secrets.js';
import { verifyPassword } from './crypto/password.js';
import type { SecretBox } from './crypto/secret_box.js';
import { openSecretBox } from './crypto/secret_key_file.js';
import { DuplicateError, type ClientRecord, type Store } from './store/store.js';
import { plainClientFields } from './directory/clients.js';
import { adminRole } from './directory/roles.js';
import { ensureManagementApi } from './management/management_api.js';

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
  /** The first user, when this start made it. */
  createdUser: string | undefined;
  /**
   * A generated first password nobody has used yet (this start's or an earlier one's), with its
   * user: for the terminal only, never for a log.
   */
  pendingPassword: { username: string; password: string } | undefined;
}

const passwordAlphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';

/** Where the generated first password waits, sealed, in the server secrets. */
export const pendingPasswordSecret = 'first_user_password';
const pendingPasswordContext = `server_secret:${pendingPasswordSecret}`;

interface PendingPassword {
  username: string;
  password: string;
}

function openPending(box: SecretBox, sealed: string): PendingPassword {
  return JSON.parse(box.open(pendingPasswordContext, sealed)) as PendingPassword;
}

/** Whether `userId` has signed in: the password step passed (signin.first_step) or the whole sign-in did. */
async function hasSignedIn(store: Store, userId: string): Promise<boolean> {
  for (const event of ['signin.success', 'signin.first_step']) {
    if ((await store.listAuditEvents({ userId, event, limit: 1 })).length > 0) return true;
  }
  return false;
}

/**
 * The kept password, while it is still to be shown: its user exists, has not signed in, and the
 * password still opens the account. Otherwise it is removed for good, so that a later purge of the
 * audit log cannot bring it back.
 */
async function stillPending(store: Store, box: () => Promise<SecretBox>): Promise<PendingPassword | undefined> {
  const sealed = await store.findServerSecret(pendingPasswordSecret);
  if (sealed === undefined) return undefined;
  const pending = openPending(await box(), sealed);
  const user = await store.findUserByUsername(pending.username);
  const unused = user !== undefined && !(await hasSignedIn(store, user.id)) && (await verifyPassword(pending.password, user.passwordHash));
  if (unused) return pending;
  await store.removeServerSecret(pendingPasswordSecret);
  return undefined;
}

export async function bootstrap(
  store: Store,
  config: Config,
  clock: Clock,
  /** How the first user's password is hashed (tests pass a memoized one: password hashing is slow by design). */
  hash: (password: string) => Promise<string> = hashPassword,
  /** Seals the generated password; default: the configured key's. */
  secretBox?: SecretBox,
): Promise<BootstrapResult> {
  const now = epochSeconds(clock);
  await store.ensureClient(builtinCliClient(now));
  await ensureManagementApi(store, config.issuer, now);
  const users = await store.countUsers();
  // An operator's own password (LATCHKEY_BOOTSTRAP_PASSWORD) is theirs to remember: nothing is kept.
  if (users === 0 && config.bootstrapPassword !== undefined) {
    const username = config.bootstrapUser ?? 'admin';
    const created = await createFirstUser(store, username, await hash(config.bootstrapPassword), now);
    return { createdUser: created ? username : undefined, pendingPassword: undefined };
  }
  const box = async () => secretBox ?? (await openSecretBox(config, store));
  if (users > 0) return { createdUser: undefined, pendingPassword: await stillPending(store, box) };
  // Sealed and stored before the user exists: whatever happens next, the next start can show it.
  const generated: PendingPassword = { username: config.bootstrapUser ?? 'admin', password: randomString(passwordAlphabet, 20) };
  const sealer = await box();
  const pending = openPending(sealer, await store.serverSecret(pendingPasswordSecret, () => sealer.seal(pendingPasswordContext, JSON.stringify(generated))));
  const created = await createFirstUser(store, pending.username, await hash(pending.password), now);
  if (created) return { createdUser: pending.username, pendingPassword: pending };
  // Another instance made the first user in the meantime, with this same password unless an
  // operator's command got there first.
  return { createdUser: undefined, pendingPassword: await stillPending(store, box) };
}

/** Makes the first user, an administrator; false when another process made a user of that name first. */
async function createFirstUser(store: Store, username: string, passwordHash: string, now: number): Promise<boolean> {
  const id = randomUuid();
  try {
    await store.createUser({
      id,
      username,
      email: username.includes('@') ? username : `${username}@localhost`,
      name: undefined,
      passwordHash,
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
    if (err instanceof DuplicateError) return false;
    throw err;
  }
  await store.grantRole(id, adminRole, now);
  return true;
}
