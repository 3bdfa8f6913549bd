/**
 * A software WebAuthn authenticator (ES256, "none" attestation) for the route tests, written from
 * the WebAuthn Level 3 spec (§6.1 authenticator data, §6.5 attested credential data, §8.7 "none")
 * and RFC 8949 (CBOR): it answers the options our server hands out the way a browser with a
 * passkey would, and can be bent to play an attacker (another origin, a replayed counter, someone
 * else's user handle). The real thing is exercised in Chromium with a virtual authenticator
 * (test/e2e/passkeys.e2e.test.ts).
 */
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';

// ─── CBOR, just what attestation objects and COSE keys need ─────────────────────────────────

type Cbor = number | string | Uint8Array | Map<number | string, Cbor>;

function head(major: number, length: number): Buffer {
  if (length < 24) return Buffer.from([(major << 5) | length]);
  if (length < 256) return Buffer.from([(major << 5) | 24, length]);
  if (length < 65536) return Buffer.from([(major << 5) | 25, length >> 8, length & 0xff]);
  const b = Buffer.alloc(5);
  b[0] = (major << 5) | 26;
  b.writeUInt32BE(length, 1);
  return b;
}

export function cbor(value: Cbor): Buffer {
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value);
  if (typeof value === 'string') {
    const bytes = Buffer.from(value, 'utf8');
    return Buffer.concat([head(3, bytes.length), bytes]);
  }
  if (value instanceof Uint8Array) return Buffer.concat([head(2, value.length), Buffer.from(value)]);
  const parts: Buffer[] = [head(5, value.size)];
  for (const [k, v] of value) parts.push(cbor(k), cbor(v));
  return Buffer.concat(parts);
}

// ─── The authenticator ──────────────────────────────────────────────────────────────────────

const b64url = (b: Uint8Array) => Buffer.from(b).toString('base64url');
const sha256 = (b: Uint8Array | string) => createHash('sha256').update(b).digest();

export interface SoftCredential {
  id: Buffer;
  privateKey: KeyObject;
  publicKey: KeyObject;
  userHandle: string;
  rpId: string;
  counter: number;
}

interface CreationOptions {
  challenge: string;
  rp: { id?: string; name: string };
  user: { id: string; name: string };
}
interface RequestOptions {
  challenge: string;
  rpId?: string;
  allowCredentials?: Array<{ id: string }>;
}

export interface Bend {
  /** The origin the "browser" reports (default: the right one). */
  origin?: string;
  /** Leave the user-verified flag off (a security key without a PIN). */
  noUserVerification?: boolean;
  /** Sign with this counter instead of the next one (a cloned key replaying an old count). */
  counter?: number;
  /** Claim another user handle. */
  userHandle?: string;
}

export class SoftAuthenticator {
  readonly credentials: SoftCredential[] = [];

  constructor(readonly origin: string) {}

  /** navigator.credentials.create(): the RegistrationResponseJSON a browser would post. */
  register(options: CreationOptions, bend: Bend = {}): Record<string, unknown> {
    const rpId = options.rp.id ?? new URL(this.origin).hostname;
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = publicKey.export({ format: 'jwk' });
    const cose = new Map<number, Cbor>([
      [1, 2], // kty: EC2
      [3, -7], // alg: ES256
      [-1, 1], // crv: P-256
      [-2, Buffer.from(jwk.x!, 'base64url')],
      [-3, Buffer.from(jwk.y!, 'base64url')],
    ]);
    const id = randomBytes(32);
    const credential: SoftCredential = { id, privateKey, publicKey, userHandle: options.user.id, rpId, counter: 0 };
    const flags = 0x01 | (bend.noUserVerification ? 0 : 0x04) | 0x40; // UP, UV, AT
    const counter = Buffer.alloc(4);
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(id.length);
    const authData = Buffer.concat([sha256(rpId), Buffer.from([flags]), counter, Buffer.alloc(16), idLength, id, cbor(cose)]);
    const attestationObject = cbor(
      new Map<string, Cbor>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', authData],
      ]),
    );
    const clientData = JSON.stringify({ type: 'webauthn.create', challenge: options.challenge, origin: bend.origin ?? this.origin, crossOrigin: false });
    this.credentials.push(credential);
    return {
      id: b64url(id),
      rawId: b64url(id),
      type: 'public-key',
      response: { clientDataJSON: b64url(Buffer.from(clientData)), attestationObject: b64url(attestationObject), transports: ['internal'] },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }

  /** navigator.credentials.get(): the AuthenticationResponseJSON, from `credential` or the first allowed one it holds. */
  authenticate(options: RequestOptions, bend: Bend = {}, credential?: SoftCredential): Record<string, unknown> {
    const allowed = options.allowCredentials?.map((c) => c.id);
    const chosen = credential ?? this.credentials.find((c) => allowed === undefined || allowed.includes(b64url(c.id)));
    if (!chosen) throw new Error('NotAllowedError: no credential for these options');
    chosen.counter = bend.counter ?? chosen.counter + 1;
    const counter = Buffer.alloc(4);
    counter.writeUInt32BE(chosen.counter);
    const flags = 0x01 | (bend.noUserVerification ? 0 : 0x04);
    const authData = Buffer.concat([sha256(options.rpId ?? chosen.rpId), Buffer.from([flags]), counter]);
    const clientData = Buffer.from(
      JSON.stringify({ type: 'webauthn.get', challenge: options.challenge, origin: bend.origin ?? this.origin, crossOrigin: false }),
    );
    const signature = sign('sha256', Buffer.concat([authData, sha256(clientData)]), chosen.privateKey);
    return {
      id: b64url(chosen.id),
      rawId: b64url(chosen.id),
      type: 'public-key',
      response: {
        clientDataJSON: b64url(clientData),
        authenticatorData: b64url(authData),
        signature: b64url(signature),
        userHandle: bend.userHandle ?? chosen.userHandle,
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }
}
