/**
 * The credentials file, ~/.latchkey/credentials.json (or $LATCHKEY_HOME): one entry per profile.
 * The folder is 0700 and the file 0600; every write goes to a temporary file that is synced and
 * renamed over the old one, so a crash never leaves half a file. Refreshes take a lock file, so two
 * `latchkey token` runs at once cannot lose the rotated refresh token.
 */
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { systemClock } from '../../clock.js';
import { randomBelow, randomSecret } from '../../crypto/secrets.js';
import { CommandError } from '../command.js';

const profileSchema = z.object({
  issuer: z.string(),
  client_id: z.string(),
  audience: z.string().optional(),
  scope: z.string(),
  access_token: z.string(),
  token_type: z.string(),
  expires_at: z.number(),
  refresh_token: z.string().optional(),
  id_token: z.string().optional(),
});

const fileSchema = z.object({ version: z.literal(1), profiles: z.record(z.string(), profileSchema) });

export type Profile = z.infer<typeof profileSchema>;
type CredentialsFile = z.infer<typeof fileSchema>;

export class CredentialsStore {
  readonly path: string;
  private readonly lockPath: string;

  constructor(readonly home: string) {
    this.path = join(home, 'credentials.json');
    this.lockPath = `${this.path}.lock`;
  }

  private ensureFolder(): void {
    mkdirSync(this.home, { recursive: true, mode: 0o700 });
    chmodSync(this.home, 0o700);
  }

  private readFile(): CredentialsFile {
    if (!existsSync(this.path)) return { version: 1, profiles: {} };
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(this.path, 'utf8'));
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
    return this.readFile().profiles[profile];
  }

  set(profile: string, value: Profile): void {
    const file = this.readFile();
    file.profiles[profile] = value;
    this.writeFile(file);
  }

  remove(profile: string): boolean {
    const file = this.readFile();
    if (!(profile in file.profiles)) return false;
    delete file.profiles[profile];
    this.writeFile(file);
    return true;
  }

  /**
   * Runs `work` holding the lock file (created exclusively). A lock older than 30 s was left by a
   * process that died, and is taken over. Waits up to 15 s for another holder.
   */
  async withLock<T>(work: () => Promise<T>): Promise<T> {
    this.ensureFolder();
    const nowMs = () => systemClock() * 1000;
    const deadline = nowMs() + 15_000;
    for (;;) {
      try {
        closeSync(openSync(this.lockPath, 'wx', 0o600));
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        try {
          if (nowMs() - statSync(this.lockPath).mtimeMs > 30_000) unlinkSync(this.lockPath);
        } catch {
          // The holder released it meanwhile.
        }
        if (nowMs() > deadline) throw new CommandError(`another latchkey process holds ${this.lockPath}; try again`);
        await new Promise((resolve) => setTimeout(resolve, 50 + randomBelow(50)));
      }
    }
    try {
      return await work();
    } finally {
      try {
        unlinkSync(this.lockPath);
      } catch {
        // Already gone.
      }
    }
  }
}
