/**
 * Bench fixtures written through the Store's own verbs (never through a route that exists only for
 * benchmarks): a user, a device client and a browser client, and batches of device grants,
 * authorization codes and refresh tokens whose secrets the load generator then presents; and, for
 * the sign-in scenarios, people with passwords (and, for the second one, a TOTP app each) and the
 * web application they sign in to.
 */
import { plainClientFields } from '../src/directory/clients.js';
import { randomBytes } from 'node:crypto';
import type { Config } from '../src/config.js';
import { hashPassword } from '../src/crypto/password.js';
import { openSecretBox } from '../src/crypto/secret_key_file.js';
import { randomId, randomSecret, secretPrefix, sha256 } from '../src/crypto/secrets.js';
import { orderedSecret, orderedSecretDigest } from '../src/crypto/ordered_secrets.js';
import { newTotpSecret, totpPeriod } from '../src/mfa/totp.js';
import { totpSecretContext } from '../src/mfa/totp_secret.js';
import { s256 } from '../src/oauth/pkce.js';
import { newRefreshToken } from '../src/oauth/refresh_tokens.js';
import type { Store, UserRecord } from '../src/store/store.js';

export const benchUser = { id: 'bench-user', username: 'bench' };
export const deviceClientId = 'bench-device';
export const webClientId = 'bench-web';
export const redirectUri = 'http://127.0.0.1/callback';
/** Device-flow logins ask for a refresh token, as `latchkey login` does. */
export const deviceScope = 'openid profile offline_access';
export const webScope = 'openid profile offline_access';
/** One verifier for every seeded code: PKCE is still checked in full on each exchange. */
export const codeVerifier = randomBytes(32).toString('base64url');
/**
 * The web application of the sign-in scenario: first-party (no consent page) with an https
 * redirect (no one-click loopback confirmation), as a company's own application would be.
 */
export const signInClientId = 'bench-signin';
export const signInRedirectUri = 'https://app.bench.example/callback';
export const signInScope = 'openid profile';

export interface SignInAccount {
  username: string;
  password: string;
  /** The base32 secret of the person's TOTP app, for accounts with that second factor. */
  totpSecret?: string;
}

/** A store that can run many verbs in one transaction (the SQLite store). */
type BulkStore = Store & { bulk(work: () => void): void };

/**
 * Inserts `count` records through `insert` (a Store verb): on SQLite in transactions of `batch`
 * (its verbs finish their work synchronously, so they all land in that transaction); on PostgreSQL
 * a few hundred at a time, each verb its own statement, as the server would write them.
 */
async function inBatches(store: Store, count: number, insert: (index: number) => Promise<void>, batch = 10_000): Promise<void> {
  const bulk = 'bulk' in store ? (store as BulkStore).bulk.bind(store) : undefined;
  const size = bulk ? batch : 256;
  for (let start = 0; start < count; start += size) {
    const pending: Promise<void>[] = [];
    const add = () => {
      for (let i = start; i < Math.min(count, start + size); i++) pending.push(insert(i));
    };
    if (bulk) bulk(add);
    else add();
    await Promise.all(pending);
  }
}

export async function seedBase(store: Store, now: number): Promise<void> {
  await store.createUser({
    id: benchUser.id,
    username: benchUser.username,
    email: 'bench@example.com',
    name: 'Bench User',
    // Never used to sign in: the bench approves through the store.
    passwordHash: 'scrypt$disabled',
    disabled: false,
    createdAt: now,
    tokensRevokedAt: undefined,
    source: 'local',
    emailVerified: true,
    groups: [],
    roles: [],
    profile: {},
    updatedAt: now,
  });
  const common = {
    secretHash: undefined,
    requirePkce: true,
    firstParty: true,
    builtIn: false,
    createdAt: now,
    tokensRevokedAt: undefined,
    postLogoutRedirectUris: [],
    webOrigins: [],
    backchannelLogoutUri: undefined,
    ...plainClientFields,
  };
  await store.createClient({ ...common, clientId: deviceClientId, name: 'Bench device', redirectUris: [], grantTypes: ['device_code', 'refresh_token'] });
  await store.createClient({
    ...common,
    clientId: webClientId,
    name: 'Bench web',
    redirectUris: [redirectUri],
    grantTypes: ['authorization_code', 'refresh_token'],
  });
}

export interface DeviceGrantSeed {
  count: number;
  status: 'pending' | 'approved';
  now: number;
  config: Config;
  /** Keep the device codes (false for filler rows nobody presents). */
  keep?: boolean;
}

/** Device grants as a device authorization (and, for approved ones, the person's approval) leave them. */
export async function seedDeviceGrants(store: Store, seed: DeviceGrantSeed): Promise<string[]> {
  const codes: string[] = [];
  await inBatches(store, seed.count, (i) => {
    const deviceCode = orderedSecret(secretPrefix.deviceCode);
    if (seed.keep !== false) codes.push(deviceCode);
    const approved = seed.status === 'approved';
    return store.createDeviceGrant({
      id: randomId(),
      deviceCodeHash: orderedSecretDigest(deviceCode, secretPrefix.deviceCode),
      userCodeHash: sha256(`bench-user-code-${i}-${deviceCode}`),
      clientId: deviceClientId,
      scope: deviceScope,
      audience: seed.config.defaultAudience,
      status: seed.status,
      interval: seed.config.deviceInterval,
      lastPolledAtMs: undefined,
      userId: approved ? benchUser.id : undefined,
      authTime: approved ? seed.now : undefined,
      amr: approved ? ['pwd'] : [],
      acrValues: '',
      requesterIp: '127.0.0.1',
      requesterUserAgent: 'latchkey-bench',
      createdAt: seed.now,
      expiresAt: seed.now + seed.config.deviceCodeTtl,
      decidedAt: approved ? seed.now : undefined,
      consumedAt: undefined,
      accessTokenJti: undefined,
      refreshFamilyId: undefined,
      issuedAt: undefined,
      recoveries: 0,
      dpopJkt: undefined,
    });
  });
  return codes;
}

/** Authorization codes as /authorize leaves them after sign-in and consent, with an S256 challenge. */
export async function seedAuthorizationCodes(store: Store, count: number, now: number, config: Config): Promise<string[]> {
  const codes: string[] = [];
  const challenge = s256(codeVerifier);
  await inBatches(store, count, () => {
    const code = randomSecret(secretPrefix.authorizationCode);
    codes.push(code);
    return store.createAuthorizationCode({
      codeHash: sha256(code),
      clientId: webClientId,
      userId: benchUser.id,
      redirectUri,
      scope: webScope,
      audience: config.defaultAudience,
      nonce: undefined,
      codeChallenge: challenge,
      authTime: now,
      amr: ['pwd'],
      createdAt: now,
      // Codes live 60 s in service; these must outlast the seeding and the run.
      expiresAt: now + 3600,
      consumedAt: undefined,
      accessTokenJti: undefined,
      refreshFamilyId: undefined,
      approvedIp: '127.0.0.1',
      approvedUserAgent: 'latchkey-bench',
      sessionId: undefined,
      dpopJkt: undefined,
      claims: undefined,
    });
  });
  return codes;
}

/** Refresh tokens of separate families, as a device-flow login leaves them. */
export async function seedRefreshTokens(store: Store, count: number, now: number, config: Config): Promise<string[]> {
  const tokens: string[] = [];
  await inBatches(store, count, () => {
    const token = newRefreshToken(config, now, {
      familyId: randomId(),
      clientId: deviceClientId,
      userId: benchUser.id,
      scope: deviceScope,
      audience: config.defaultAudience,
      authTime: now,
      amr: ['pwd'],
      approvedIp: '127.0.0.1',
      approvedUserAgent: 'latchkey-bench',
      sessionId: undefined,
      dpopJkt: undefined,
      claims: undefined,
    });
    tokens.push(token.value);
    return store.createRefreshToken(token.record).then(() => undefined);
  });
  return tokens;
}

/** The web application people sign in to, made once for both sign-in scenarios. */
async function ensureSignInClient(store: Store, now: number): Promise<void> {
  if (await store.findClient(signInClientId)) return;
  await store.createClient({
    clientId: signInClientId,
    name: 'Bench web application',
    secretHash: undefined,
    redirectUris: [signInRedirectUri],
    grantTypes: ['authorization_code'],
    requirePkce: true,
    firstParty: true,
    builtIn: false,
    createdAt: now,
    tokensRevokedAt: undefined,
    postLogoutRedirectUris: [],
    webOrigins: [],
    backchannelLogoutUri: undefined,
    ...plainClientFields,
  });
}

function signInUser(id: string, username: string, name: string, passwordHash: string, now: number): UserRecord {
  return {
    id,
    username,
    email: `${username}@example.com`,
    name,
    passwordHash,
    disabled: false,
    createdAt: now,
    tokensRevokedAt: undefined,
    source: 'local',
    emailVerified: true,
    groups: [],
    roles: [],
    profile: {},
    updatedAt: now,
  };
}

/**
 * People who sign in through the pages, one account per simulated browser (nobody signs in twice
 * at once), with a password hashed as the server hashes new ones. One hash serves every account:
 * what the scenario measures is the server verifying it.
 */
export async function seedSignInAccounts(store: Store, count: number, now: number): Promise<SignInAccount[]> {
  const password = randomBytes(15).toString('base64url');
  const passwordHash = await hashPassword(password);
  await ensureSignInClient(store, now);
  const accounts: SignInAccount[] = [];
  for (let i = 0; i < count; i++) {
    const username = `signin-${i}`;
    await store.createUser(signInUser(`bench-signin-${i}`, username, `Sign-in ${i}`, passwordHash, now));
    accounts.push({ username, password });
  }
  return accounts;
}

/**
 * People with a password and a TOTP app, enrolled as the account page enrols one (a secret from
 * the server's own generator, sealed with the server's secret key for that person, the step of
 * the confirming code recorded as spent: here the step before now). The load generator is their
 * app: it knows each secret. A code is accepted once per 30 s step and account (RFC 6238 §5.2), so
 * the caller asks for as many accounts as sign-ins may come within one step.
 */
export async function seedTotpSignInAccounts(store: Store, count: number, now: number, config: Config): Promise<SignInAccount[]> {
  const password = randomBytes(15).toString('base64url');
  const passwordHash = await hashPassword(password);
  const secretBox = await openSecretBox(config, store);
  await ensureSignInClient(store, now);
  const enrolledStep = Math.floor(now / totpPeriod) - 1;
  const accounts: SignInAccount[] = [];
  await inBatches(store, count, async (i) => {
    const userId = `bench-signin-totp-${i}`;
    const username = `signin-totp-${i}`;
    const totpSecret = newTotpSecret();
    accounts.push({ username, password, totpSecret });
    await store.createUser(signInUser(userId, username, `Sign-in with TOTP ${i}`, passwordHash, now));
    await store.saveTotp({ userId, secret: secretBox.seal(totpSecretContext(userId), totpSecret), lastStep: enrolledStep, createdAt: now });
  });
  return accounts;
}
