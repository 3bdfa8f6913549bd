/**
 * The credentials file, ~/.latchkey/credentials.json (or $LATCHKEY_HOME): one entry per profile.
 * A folder the tool creates is 0700 and the file 0600; every write goes to a temporary file that
 * is synced and renamed over the old one, so a crash never leaves half a file. Every
 * read-modify-write happens under a lock file holding the owner's pid, so concurrent runs cannot
 * lose a rotated refresh token, and a lock left by a process that died is taken over at once.
 * Each profile is checked on its own: one damaged entry does not lock the others out.
 */
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { systemClock } from '../../clock.js';
import { randomBelow, randomSecret } from '../../crypto/secrets.js';
import { CommandError } from '../command.js';
import { loginCommandLine } from './sign_in_hint.js';

export const profileSchema = z.object({
  issuer: z.string(),
  client_id: z.string(),
  audience: z.string().optional(),
  scope: z.string(),
  access_token: z.string().min(1),
  token_type: z.string(),
  expires_at: z.number(),
  refresh_token: z.string().optional(),
  id_token: z.string().optional(),
  /** Whose sign-in it is, as the userinfo endpoint said at sign-in (shown by `latchkey status`). */
  account: z.object({ sub: z.string(), preferred_username: z.string().optional(), email: z.string().optional() }).optional(),
  /** `login --dpop`: the private key the tokens are bound to (RFC 9449); this file is 0600. */
  dpop_jwk: z.record(z.string(), z.unknown()).optional(),
});

const fileSchema = z.object({ version: z.literal(1), profiles: z.record(z.string(), z.unknown()) });

export type Profile = z.infer<typeof profileSchema>;

/** A profile as `latchkey status` lists it: readable, or damaged (and then only its name is known). */
export type StoredProfile = { name: string; profile: Profile } | { name: string; damaged: true; issuer: string | undefined };
type CredentialsFile = z.infer<typeof fileSchema>;

/** The issuer a damaged profile still names, if it names a usable one (for the "sign in again" command). */
function damagedIssuer(raw: unknown): string | undefined {
  const issuer = typeof raw === 'object' && raw !== null ? (raw as { issuer?: unknown }).issuer : undefined;
  return typeof issuer === 'string' && /^https?:\/\/[\x21-\x7e]+$/.test(issuer) && URL.canParse(issuer) ? issuer : undefined;
}

/** A lock older than this is taken over even if its owner seems alive (a hung process). */
const staleLockMs = 120_000;

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class CredentialsStore {
  readonly path: string;
  private readonly lockPath: string;

  /**
   * `home`: where the file lives; `defaultIssuer`: the issuer `latchkey login` uses when given
   * none, so that messages name `--issuer` only when it differs.
   */
  constructor(
    readonly home: string,
    readonly defaultIssuer: string,
  ) {
    this.path = join(home, 'credentials.json');
    this.lockPath = `${this.path}.lock`;
  }

  private ensureFolder(): void {
    // Only a folder made here gets 0700: LATCHKEY_HOME may point at a folder the person manages.
    if (!existsSync(this.home)) mkdirSync(this.home, { recursive: true, mode: 0o700 });
  }

  private readFile(): CredentialsFile {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return { version: 1, profiles: {} };
      throw new CommandError(`cannot read the credentials file ${this.path}: ${code ?? (err as Error).message}`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new CommandError(`the credentials file ${this.path} is damaged (not JSON); delete it and run "latchkey login" again`);
    }
    const result = fileSchema.safeParse(parsed);
    if (!result.success) {
      throw new CommandError(`the credentials file ${this.path} is damaged (unexpected content); delete it and run "latchkey login" again`);
    }
    return result.data;
  }

  private writeFile(file: CredentialsFile): void {
    this.ensureFolder();
    const temporary = `${this.path}.${randomSecret().slice(0, 12)}.tmp`;
    const fd = openSync(temporary, 'wx', 0o600);
    try {
      writeSync(fd, JSON.stringify(file, null, 2) + '\n');
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, this.path);
  }

  get(profile: string): Profile | undefined {
    const raw = this.readFile().profiles[profile];
    if (raw === undefined) return undefined;
    const result = profileSchema.safeParse(raw);
    if (!result.success) {
      throw new CommandError(
        `the profile "${profile}" in ${this.path} is damaged; run "${loginCommandLine({ profile, issuer: damagedIssuer(raw), defaultIssuer: this.defaultIssuer })}" again`,
      );
    }
    return result.data;
  }

  /** Every stored profile, `default` first, then by name; a damaged one is listed as such. Read only: no lock. */
  list(): StoredProfile[] {
    const { profiles } = this.readFile();
    const names = Object.keys(profiles).sort((a, b) => (a === 'default' ? -1 : b === 'default' ? 1 : a.localeCompare(b)));
    return names.map((name) => {
      const result = profileSchema.safeParse(profiles[name]);
      return result.success ? { name, profile: result.data } : { name, damaged: true as const, issuer: damagedIssuer(profiles[name]) };
    });
  }

  /** Call under withLock: a read-modify-write of the whole file. */
  set(profile: string, value: Profile): void {
    const file = this.readFile();
    file.profiles[profile] = profileSchema.parse(value);
    this.writeFile(file);
  }

  /** Call under withLock. */
  remove(profile: string): boolean {
    const file = this.readFile();
    if (!(profile in file.profiles)) return false;
    delete file.profiles[profile];
    this.writeFile(file);
    return true;
  }

  private tryTakeOverStaleLock(): void {
    let owner: number | undefined;
    let age: number;
    try {
      owner = Number(readFileSync(this.lockPath, 'utf8').trim()) || undefined;
      age = systemClock() * 1000 - statSync(this.lockPath).mtimeMs;
    } catch {
      return; // released meanwhile
    }
    if (owner !== undefined && processAlive(owner) && age < staleLockMs) return;
    // Rename first: of several processes taking over, only one succeeds, and no fresh lock is deleted.
    const aside = `${this.lockPath}.${randomSecret().slice(0, 8)}.stale`;
    try {
      renameSync(this.lockPath, aside);
      unlinkSync(aside);
    } catch {
      // Someone else took it over first.
    }
  }

  /** Runs `work` holding the lock file (created exclusively, with our pid). Waits up to 15 s. */
  async withLock<T>(work: () => Promise<T>): Promise<T> {
    this.ensureFolder();
    const deadline = systemClock() * 1000 + 15_000;
    for (;;) {
      try {
        const fd = openSync(this.lockPath, 'wx', 0o600);
        writeSync(fd, String(process.pid));
        closeSync(fd);
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
          throw new CommandError(`cannot lock the credentials file ${this.path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
        }
        this.tryTakeOverStaleLock();
        if (systemClock() * 1000 > deadline) throw new CommandError(`another latchkey process holds ${this.lockPath}; try again`);
        await new Promise((resolve) => setTimeout(resolve, 50 + randomBelow(50)));
      }
    }
    const release = () => {
      try {
        unlinkSync(this.lockPath);
      } catch {
        // Already gone.
      }
    };
    // Ctrl-C while holding the lock must not leave it behind.
    const onSignal = () => {
      release();
      process.exit(130);
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      return await work();
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      release();
    }
  }
}
