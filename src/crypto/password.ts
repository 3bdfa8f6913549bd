/**
 * Password hashing with Argon2id (RFC 9106), with the parameters of OWASP's Password Storage Cheat
 * Sheet: 19 MiB of memory, 2 passes, 1 lane. The stored form is the PHC string
 * `$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>`, which carries its own parameters, so that raising
 * them later leaves older hashes verifiable.
 *
 * Hashes stored by earlier versions — scrypt, `scrypt$N$r$p$salt$hash` with N=2^15 — still verify.
 * They, and Argon2id hashes of other parameters, need a rehash: the sign-in that proves the
 * password stores it anew (http/password_upgrade.ts).
 *
 * Both run on libuv's thread pool (@node-rs/argon2's async API is a N-API async work item, and
 * node:crypto's scrypt with a callback), so a sign-in never blocks the event loop; the final
 * comparison is the library's constant-time one (timingSafeEqual for scrypt). At most one hash per
 * core this process may run on is computed at a time: more would add no throughput, only 19 MiB
 * of memory each, and would hold libuv threads that file, DNS and zlib work need too.
 */
import { hash as argon2Hash, parseOptions, verify as argon2Verify, type Algorithm } from '@node-rs/argon2';
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { availableParallelism } from 'node:os';

/**
 * The current parameters. @node-rs/argon2 declares its Algorithm and Version as const enums, which
 * isolatedModules cannot read: 2 is Argon2id and 1 is version 0x13 in its index.d.ts.
 */
export const passwordHashParameters = { algorithm: 'argon2id', memoryKiB: 19_456, passes: 2, lanes: 1, version: 0x13, outputBytes: 32 } as const;
// eslint-disable-next-line @typescript-eslint/no-unsafe-enum-assignment -- the const enum's value, as said above
const argon2id: Algorithm = 2;
const version0x13 = 1;
const argon2Options = {
  algorithm: argon2id,
  memoryCost: passwordHashParameters.memoryKiB,
  timeCost: passwordHashParameters.passes,
  parallelism: passwordHashParameters.lanes,
  outputLen: passwordHashParameters.outputBytes,
};

const argon2idPrefix = '$argon2id$';
const scryptPrefix = 'scrypt$';

/**
 * One password, one byte sequence: the same password typed on another system may arrive composed
 * differently (é as one code point or two), and must still match.
 */
function normalized(password: string): string {
  return password.normalize('NFKC');
}

/** The cores this process may run on (its CPU affinity: one when the server is pinned to a core). */
const maxHashesAtOnce = Math.max(1, availableParallelism());
let hashesRunning = 0;
const waitingForSlot: (() => void)[] = [];

/** Runs one hash when a slot is free, in arrival order (libuv's own queue is first-come too). */
async function inHashSlot<T>(work: () => Promise<T>): Promise<T> {
  if (hashesRunning < maxHashesAtOnce) hashesRunning++;
  else await new Promise<void>((resolve) => waitingForSlot.push(resolve));
  try {
    return await work();
  } finally {
    // The slot passes straight to the next in line, or is freed.
    const next = waitingForSlot.shift();
    if (next) next();
    else hashesRunning--;
  }
}

export function hashPassword(password: string): Promise<string> {
  return inHashSlot(() => argon2Hash(normalized(password), argon2Options));
}

/** False for a wrong password and for a stored hash that is damaged in any way: never throws. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  if (stored.startsWith(argon2idPrefix)) {
    try {
      return await inHashSlot(() => argon2Verify(stored, normalized(password)));
    } catch {
      return false;
    }
  }
  if (stored.startsWith(scryptPrefix)) return inHashSlot(() => verifyScrypt(password, stored));
  return false;
}

/**
 * Whether a stored hash is not made the current way (scrypt, or Argon2id with other parameters),
 * so that the next proof of the password should store it again with hashPassword.
 */
export function passwordHashNeedsRehash(stored: string): boolean {
  if (!stored.startsWith(argon2idPrefix)) return true;
  try {
    const used = parseOptions(stored);
    return !(
      used.algorithm === argon2id &&
      // eslint-disable-next-line @typescript-eslint/no-unsafe-enum-comparison -- the const enum's value, as said above
      used.version === version0x13 &&
      used.memoryCost === argon2Options.memoryCost &&
      used.timeCost === argon2Options.timeCost &&
      used.parallelism === argon2Options.parallelism &&
      used.outputLen === argon2Options.outputLen
    );
  } catch {
    return true;
  }
}

/** The scheme of a stored hash this server verifies; undefined for anything else. */
export function passwordHashScheme(stored: string): 'argon2id' | 'scrypt' | undefined {
  if (stored.startsWith(argon2idPrefix)) return 'argon2id';
  if (stored.startsWith(scryptPrefix)) return 'scrypt';
  return undefined;
}

/**
 * Whether the account has a password of its own here, in any format this server verifies (an
 * account made by a connector stores the marker `upstream` instead, which no password matches).
 */
export function isLocalPasswordHash(stored: string): boolean {
  return passwordHashScheme(stored) !== undefined;
}

const scryptKeyLength = 32;

function scryptDerive(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(normalized(password), salt, scryptKeyLength, { ...options, maxmem: 256 * 1024 * 1024 }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** The format of earlier versions, verified so that their users can still sign in (and be rehashed). */
async function verifyScrypt(password: string, stored: string): Promise<boolean> {
  const [, n, r, p, salt, hash] = stored.split('$');
  if (!n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  try {
    const key = await scryptDerive(password, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p) });
    return key.length === expected.length && timingSafeEqual(key, expected);
  } catch {
    return false;
  }
}

/**
 * A hash of a random password, made the current way, verified against when the username is
 * unknown: the answer for "no such user" then costs one Argon2id verification with the same
 * parameters as "wrong password" for an account whose hash is current.
 */
let decoy: Promise<string> | undefined;
export function decoyPasswordHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(16).toString('base64url'));
  return decoy;
}
