/**
 * Server secrets at rest: signing keys' private keys and the server's HMAC keys (CSRF,
 * user codes) are stored encrypted with a key kept outside the database, so a stolen database or
 * backup cannot forge tokens. AES-256-GCM with a fresh 96-bit nonce per value, and the value's
 * place in the database ("signing_key:<kid>", "server_secret:<name>") as additional data, so a
 * ciphertext cannot be moved to another row. Stored form: `lk1.<key id>.<nonce>.<ciphertext+tag>`,
 * base64url; the key id (from a digest of the key) says which key opens it, so keys can be rotated.
 * Upstream connector secrets and TOTP secrets use the same box.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export interface SecretKey {
  /** 8 base64url characters of SHA-256 of the key: names it without revealing it. */
  id: string;
  key: Buffer;
}

export class SecretKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretKeyError';
  }
}

const prefix = 'lk1';

export function secretKeyOf(key: Buffer): SecretKey {
  return { id: createHash('sha256').update(key).digest('base64url').slice(0, 8), key };
}

/** A new random 256-bit key, as the text LATCHKEY_SECRET_KEY and the key file hold. */
export function generateSecretKeyText(): string {
  return randomBytes(32).toString('base64url');
}

/** One key written as 43 base64url characters, 44 base64 characters, or 64 hex digits. */
export function parseSecretKey(text: string): Buffer | undefined {
  const value = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(value)) return Buffer.from(value, 'hex');
  if (/^[A-Za-z0-9_-]{43}$/.test(value)) return Buffer.from(value, 'base64url');
  if (/^[A-Za-z0-9+/]{43}=$/.test(value)) return Buffer.from(value, 'base64');
  return undefined;
}

/** Several keys, comma- or line-separated, the first the current one; undefined if any is malformed. */
export function parseSecretKeys(text: string): SecretKey[] | undefined {
  const withoutComments = text
    .split('\n')
    .map((line) => line.replace(/#.*$/, ''))
    .join('\n');
  const parts = withoutComments.split(/[\s,]+/).filter((p) => p !== '');
  const keys = parts.map(parseSecretKey);
  if (keys.length === 0 || keys.some((k) => k === undefined)) return undefined;
  return (keys as Buffer[]).map(secretKeyOf);
}

export function isSealed(value: string): boolean {
  return value.startsWith(`${prefix}.`);
}

/** The id of the key that sealed a stored value (undefined for a value stored in the clear). */
export function sealedKeyId(value: string): string | undefined {
  return isSealed(value) ? value.split('.')[1] : undefined;
}

/**
 * Encrypts and decrypts with a set of keys: the first seals, any opens. `reload`, when given, is
 * asked for the keys again when a value names a key it does not hold (a key file rotated by
 * `latchkey secret-key rotate` while this process runs).
 */
export interface KeySource {
  /** The keys as they are now (a key file rotated by `latchkey secret-key rotate` while this process runs). */
  reload: () => SecretKey[];
  /** Whether the keys may have changed since they were last read (checked before sealing). */
  stale?: () => boolean;
}

export class SecretBox {
  private keys: SecretKey[];
  private readonly source: KeySource | undefined;

  constructor(keys: SecretKey[], source?: KeySource | (() => SecretKey[])) {
    if (keys.length === 0) throw new SecretKeyError('no secret key');
    this.keys = keys;
    this.source = typeof source === 'function' ? { reload: source } : source;
  }

  get currentKeyId(): string {
    return this.sealingKey.id;
  }

  /** The first key, which seals (the constructor refuses an empty list). */
  private get sealingKey(): SecretKey {
    const [first] = this.keys;
    if (first === undefined) throw new SecretKeyError('no secret key');
    return first;
  }

  get keyIds(): string[] {
    return this.keys.map((k) => k.id);
  }

  seal(context: string, plaintext: string): string {
    if (this.source?.stale?.()) this.keys = this.source.reload();
    const { id, key } = this.sealingKey;
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, nonce);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `${prefix}.${id}.${nonce.toString('base64url')}.${body.toString('base64url')}`;
  }

  /**
   * The plaintext of a sealed value. A value stored in the clear is refused: the server seals what
   * an older version left at its start, so one found later was put there by someone who could
   * write to the database (their own signing key, say) and must not be used.
   */
  open(context: string, stored: string): string {
    if (!isSealed(stored)) throw new SecretKeyError(`the stored secret ${context} is not encrypted: refusing to use it`);
    const [, id = '', nonce = '', body = ''] = stored.split('.');
    let key = this.keys.find((k) => k.id === id);
    if (!key && this.source) {
      this.keys = this.source.reload();
      key = this.keys.find((k) => k.id === id);
    }
    if (!key)
      throw new SecretKeyError(
        `the database's secrets were encrypted with secret key ${id}, which is not among the configured keys (${this.keyIds.join(', ')})`,
      );
    const raw = Buffer.from(body, 'base64url');
    if (raw.length < 16) throw new SecretKeyError(`the stored secret ${context} is damaged`);
    try {
      const decipher = createDecipheriv('aes-256-gcm', key.key, Buffer.from(nonce, 'base64url'));
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(raw.subarray(raw.length - 16));
      return Buffer.concat([decipher.update(raw.subarray(0, raw.length - 16)), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretKeyError(`the stored secret ${context} does not open with secret key ${id}: it was altered or belongs elsewhere`);
    }
  }

  /** The stored form under the current key: unchanged if it already is, else opened (or, in the clear, taken as is) and sealed again. */
  reseal(context: string, stored: string): string {
    if (sealedKeyId(stored) === this.currentKeyId) return stored;
    return this.seal(context, isSealed(stored) ? this.open(context, stored) : stored);
  }
}
