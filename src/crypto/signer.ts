/**
 * Signs JWTs with the active keys from the store, publishes the JWKS, and verifies the access
 * tokens this server issued. jose is used for keys, the JWKS and verification; signing itself goes
 * through node:crypto (jwt_sign.ts), which is several times faster.
 *
 * Access tokens are signed with the configured algorithm (LATCHKEY_SIGNING_ALG); id_tokens always
 * with RS256, the one algorithm every OpenID relying party must accept. So there is one active key
 * per algorithm in use, and `latchkey keys rotate` replaces all of them at once.
 *
 * Key rotation may happen in another process, so the signer compares a cheap fingerprint of the key
 * table at most once a second and reloads when it changed. A retired key stays published (and
 * accepted) until every token it signed has expired.
 */
import { compactVerify, createLocalJWKSet, jwtVerify, type JWTPayload } from 'jose';
import type { Clock } from '../clock.js';
import type { PublicJwk, SigningAlgorithm, Store, SigningKeyRecord } from '../store/store.js';
import { generateSigningKey, idTokenAlgorithm, privateKeyFromPem } from './keys.js';
import { signJws, type JwsKey } from './jwt_sign.js';
import type { SecretBox } from './secret_box.js';
import { deepFreeze } from '../deep_freeze.js';
import { OAuthError } from '../errors.js';
import { isStoreUnavailable } from '../store/unavailable.js';

export interface Signer {
  /** Signs an access token (typ at+jwt) with the configured algorithm's active key. */
  signAccessToken(payload: JWTPayload): Promise<string>;
  /** Signs an id_token (typ JWT) with the active RS256 key. */
  signIdToken(payload: JWTPayload): Promise<string>;
  jwks(): Promise<{ keys: PublicJwk[] }>;
  /** The kid of the key that signs access tokens now. */
  activeKid(): Promise<string>;
  /**
   * The claims of a valid access token of ours (signature by a published key, `iss`, `typ`
   * at+jwt, not expired), or undefined.
   */
  verifyAccessToken(token: string): Promise<JWTPayload | undefined>;
  /**
   * The `sub` of an id_token this server issued to `clientId` (signature by a published key, `iss`,
   * `aud`), even an expired one (an id_token_hint or a logout hint, OIDC Core §3.1.2.1); else undefined.
   */
  idTokenHintSubject(token: string, clientId: string): Promise<string | undefined>;
  /**
   * An id_token this server issued, to whichever client (signature by a published key, `iss`), even
   * an expired one: RP-Initiated Logout's id_token_hint names the client itself. Else undefined.
   */
  idTokenHint(token: string): Promise<{ sub: string; aud: string[]; sid: string | undefined } | undefined>;
  /** Signs a Back-Channel Logout token (typ logout+jwt, OIDC Back-Channel Logout 1.0 §2.4) with the id_token key. */
  signLogoutToken(payload: JWTPayload): Promise<string>;
  /** Reloads the keys from the store now. */
  refresh(): Promise<void>;
  /**
   * Why this server cannot sign now (the newest active key in the store cannot be used: stored in
   * the clear, or under a secret key this server does not hold), or undefined when it can. Looks
   * at the store first, as signing would.
   */
  signingProblem(): Promise<string | undefined>;
}

export interface SignerOptions {
  issuer: string;
  /** The algorithm of access tokens (LATCHKEY_SIGNING_ALG). */
  accessTokenAlgorithm?: SigningAlgorithm;
  /** How long a retired key stays published: the longest lifetime of anything it signed. */
  retiredKeyRetention: number;
  /** Private keys are stored sealed with it (see secret_box.ts). */
  secretBox: SecretBox;
  /** Told once each time the store's keys become unusable, and when they can be used again. */
  onSigningProblem?: (problem: string | undefined) => void;
}

/** Where a signing key's private key lives, bound into its encryption. */
export const signingKeyContext = (kid: string) => `signing_key:${kid}`;

/** A new key of `alg`, its private key sealed for the store. */
export function newSealedSigningKey(box: SecretBox, alg: SigningAlgorithm, createdAt: number): Omit<SigningKeyRecord, 'retiredAt'> {
  const key = generateSigningKey(alg);
  return { ...key, privateKeyPem: box.seal(signingKeyContext(key.kid), key.privateKeyPem), createdAt };
}

interface LoadedKeys {
  accessKey: JwsKey;
  idTokenKey: JwsKey;
  published: PublicJwk[];
  publishedAlgorithms: string[];
  verifyKeys: ReturnType<typeof createLocalJWKSet>;
  fingerprint: string;
  /** When the next retired key leaves the JWKS (Infinity when none is published). */
  nextRetirementEnd: number;
}

const recheckEverySeconds = 1;

/** Past this many, the verified tokens are forgotten all at once (a bound on memory, about 1 KiB each). */
const maxVerifiedTokens = 2_000;

/**
 * Access tokens already verified, by their exact text: an API or a CLI presents the same token to
 * userinfo or introspection again and again, and checking its signature (through WebCrypto, on the
 * thread pool) was most of such a request. A remembered token is only ever the identical string
 * that passed every check; its expiry (and not-before) is checked again on each use against the
 * clock, and the whole memory is dropped when the published keys change (a rotation elsewhere, a
 * retired key leaving the JWKS). Whether it was revoked is not remembered: callers check that
 * against the store every time (liveAccessTokenUser).
 */
class VerifiedTokens {
  private keys: unknown;
  private readonly tokens = new Map<string, JWTPayload>();

  lookup(keys: unknown, token: string, now: number): JWTPayload | undefined {
    if (keys !== this.keys) return undefined;
    const payload = this.tokens.get(token);
    if (payload === undefined) return undefined;
    if (typeof payload.exp !== 'number' || now >= payload.exp || (typeof payload.nbf === 'number' && now < payload.nbf)) return undefined;
    return payload;
  }

  remember(keys: unknown, token: string, payload: JWTPayload): JWTPayload {
    if (keys !== this.keys || this.tokens.size >= maxVerifiedTokens) {
      this.tokens.clear();
      this.keys = keys;
    }
    const frozen = deepFreeze(payload);
    this.tokens.set(token, frozen);
    return frozen;
  }
}

/** The algorithms that need an active key: the access-token one and RS256 for id_tokens. */
export function algorithmsInUse(accessTokenAlgorithm: SigningAlgorithm): SigningAlgorithm[] {
  return [...new Set<SigningAlgorithm>([accessTokenAlgorithm, idTokenAlgorithm])];
}

function newestActive(keys: SigningKeyRecord[], alg: SigningAlgorithm): SigningKeyRecord | undefined {
  return keys.filter((k) => k.retiredAt === undefined && k.alg === alg).sort((a, b) => b.createdAt - a.createdAt)[0];
}

/** Makes sure the signing keys exist (first start), then returns a signer over the store's keys. */
export async function createSigner(store: Store, clock: Clock, options: SignerOptions): Promise<Signer> {
  const accessAlg = options.accessTokenAlgorithm ?? 'RS256';
  let loaded: LoadedKeys;
  let checkedAt = 0;

  async function load(): Promise<void> {
    // The fingerprint first: a rotation committed between the two reads then shows as a changed
    // fingerprint at the next check, instead of old keys kept under the new fingerprint.
    let fingerprint = await store.signingKeysFingerprint();
    let keys = await store.listSigningKeys();
    for (const alg of algorithmsInUse(accessAlg)) {
      if (newestActive(keys, alg)) continue;
      // Several processes may start at once on a fresh database; the store keeps one key per algorithm.
      await store.ensureSigningKey(newSealedSigningKey(options.secretBox, alg, Math.floor(clock())));
      fingerprint = await store.signingKeysFingerprint();
      keys = await store.listSigningKeys();
    }
    const toJwsKey = (alg: SigningAlgorithm): JwsKey => {
      const record = newestActive(keys, alg);
      if (!record) throw new Error(`no active ${alg} signing key`);
      return { alg, kid: record.kid, privateKey: privateKeyFromPem(options.secretBox.open(signingKeyContext(record.kid), record.privateKeyPem)) };
    };
    const accessKey = toJwsKey(accessAlg);
    const idTokenKey = accessAlg === idTokenAlgorithm ? accessKey : toJwsKey(idTokenAlgorithm);
    const now = clock();

    // The access-token key first, then the other active keys, then retired keys from the most recently retired.
    const rank = (k: SigningKeyRecord) => (k.kid === accessKey.kid ? 0 : k.retiredAt === undefined ? 1 : 2);
    const publishedKeys = keys
      .filter((k) => k.retiredAt === undefined || k.retiredAt + options.retiredKeyRetention > now)
      .sort((a, b) => rank(a) - rank(b) || (b.retiredAt ?? 0) - (a.retiredAt ?? 0));
    const published = publishedKeys.map((k) => k.publicJwk);
    const retirementEnds = publishedKeys.flatMap((k) => (k.retiredAt === undefined ? [] : [k.retiredAt + options.retiredKeyRetention]));
    loaded = {
      accessKey,
      idTokenKey,
      published,
      publishedAlgorithms: [...new Set(published.map((k) => k.alg))],
      verifyKeys: createLocalJWKSet({ keys: published }),
      fingerprint,
      nextRetirementEnd: Math.min(Infinity, ...retirementEnds),
    };
    checkedAt = now;
  }

  /**
   * Set while the store's keys cannot be used (see Signer.signingProblem). What was loaded before
   * stays in use for verification and the JWKS, but nothing is signed: a key this server cannot
   * open, or one written in the clear into a database whose secrets are sealed, is not to be
   * trusted, and signing with the key it replaced would quietly undo a rotation.
   */
  let problem: string | undefined;

  /** Notices a rotation done elsewhere, and retired keys whose retention has run out. */
  async function current(): Promise<LoadedKeys> {
    const now = clock();
    if (now - checkedAt >= recheckEverySeconds) {
      checkedAt = now;
      // While the keys cannot be used, they are read again each time: the fix (a key sealed by
      // secret-key rotate) need not change what the fingerprint covers.
      if (problem !== undefined || now >= loaded.nextRetirementEnd || (await store.signingKeysFingerprint()) !== loaded.fingerprint) {
        try {
          await load();
          if (problem !== undefined) options.onSigningProblem?.(undefined);
          problem = undefined;
        } catch (err) {
          // The database being away is the request's problem, not the keys'.
          if (isStoreUnavailable(err)) throw err;
          const text = (err as Error).message;
          if (problem !== text) options.onSigningProblem?.(text);
          problem = text;
        }
      }
    }
    return loaded;
  }

  /** The keys to sign with, or a 503 while the store's keys cannot be used. */
  async function signingKeys(): Promise<LoadedKeys> {
    const keys = await current();
    if (problem !== undefined) {
      throw new OAuthError('temporarily_unavailable', 'The server cannot issue tokens right now. Try again later.', {
        status: 503,
        detail: `cannot sign: ${problem}`,
      });
    }
    return keys;
  }

  await load();
  const verified = new VerifiedTokens();

  async function idTokenHint(token: string): Promise<{ sub: string; aud: string[]; sid: string | undefined } | undefined> {
    if (token.length > 8192 || token.split('.').length !== 3) return undefined;
    const keys = await current();
    try {
      const { payload, protectedHeader } = await compactVerify(token, keys.verifyKeys, { algorithms: keys.publishedAlgorithms });
      if (protectedHeader.typ !== undefined && protectedHeader.typ !== 'JWT') return undefined;
      const claims = JSON.parse(new TextDecoder().decode(payload)) as JWTPayload;
      const aud = (Array.isArray(claims.aud) ? claims.aud : [claims.aud]).filter((a): a is string => typeof a === 'string' && a !== '');
      if (claims.iss !== options.issuer || typeof claims.sub !== 'string' || claims.sub === '' || aud.length === 0) return undefined;
      return { sub: claims.sub, aud, sid: typeof claims.sid === 'string' ? claims.sid : undefined };
    } catch {
      return undefined;
    }
  }

  return {
    async signAccessToken(payload) {
      return signJws((await signingKeys()).accessKey, payload, 'at+jwt');
    },
    async signIdToken(payload) {
      return signJws((await signingKeys()).idTokenKey, payload, 'JWT');
    },
    async jwks() {
      return { keys: (await current()).published };
    },
    async activeKid() {
      return (await current()).accessKey.kid;
    },
    async verifyAccessToken(token) {
      if (token.length > 8192 || token.split('.').length !== 3) return undefined;
      const keys = await current();
      const now = clock();
      const known = verified.lookup(keys, token, now);
      if (known) return known;
      try {
        const { payload } = await jwtVerify(token, keys.verifyKeys, {
          issuer: options.issuer,
          typ: 'at+jwt',
          algorithms: keys.publishedAlgorithms,
          currentDate: new Date(now * 1000),
          requiredClaims: ['sub', 'exp', 'iat', 'jti', 'client_id'],
        });
        return verified.remember(keys, token, payload);
      } catch {
        return undefined;
      }
    },
    async idTokenHintSubject(token, clientId) {
      const hint = await idTokenHint(token);
      return hint && hint.aud.includes(clientId) ? hint.sub : undefined;
    },
    idTokenHint,
    async signLogoutToken(payload) {
      return signJws((await signingKeys()).idTokenKey, payload, 'logout+jwt');
    },
    refresh: load,
    async signingProblem() {
      await current();
      return problem;
    },
  };
}
