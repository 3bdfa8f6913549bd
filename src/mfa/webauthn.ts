/**
 * Passkeys (WebAuthn Level 3) through @simplewebauthn/server, the maintained TypeScript library:
 * the relying party is the issuer's host, credentials are discoverable (a passkey signs in without
 * a username) and registered with user verification required, so a passkey alone is two factors
 * (the key, and the PIN or biometric that unlocks it). Responses from the browser are checked
 * against a schema first (they are input like any other), then by the library against the
 * challenge this browser was given, the origin and the RP id.
 */
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { PasskeyRecord, UserRecord } from '../store/store.js';

export interface RelyingParty {
  id: string;
  origin: string;
  name: string;
}

/**
 * WebAuthn needs a secure context: https, or http on localhost (development and tests). On plain
 * http elsewhere — or under LATCHKEY_MFA=off — passkeys are not offered.
 */
export function relyingParty(config: Config): RelyingParty | undefined {
  if (config.mfa === 'off') return undefined;
  const url = new URL(config.issuer);
  const local = url.hostname === 'localhost' || url.hostname.endsWith('.localhost');
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && local)) return undefined;
  return { id: url.hostname, origin: url.origin, name: config.productName };
}

/** How long the browser waits for the person (ms); the challenge lives as long as the page's state. */
const ceremonyTimeoutMs = 120_000;

/** The user handle: the user's id, which is stable and says nothing about the person. */
export function userHandle(user: Pick<UserRecord, 'id'>): string {
  return Buffer.from(user.id, 'utf8').toString('base64url');
}

const base64url = z
  .string()
  .min(1)
  .max(16_384)
  .regex(/^[A-Za-z0-9_-]+$/);

const registrationSchema = z.object({
  id: base64url.max(1366),
  rawId: base64url.max(1366),
  type: z.literal('public-key'),
  response: z.object({
    clientDataJSON: base64url,
    attestationObject: base64url,
    authenticatorData: base64url.optional(),
    transports: z.array(z.string().max(32)).max(10).optional(),
    publicKeyAlgorithm: z.number().int().optional(),
    publicKey: base64url.optional(),
  }),
  authenticatorAttachment: z.enum(['platform', 'cross-platform']).optional(),
  clientExtensionResults: z.record(z.string(), z.unknown()).default({}),
});

const authenticationSchema = z.object({
  id: base64url.max(1366),
  rawId: base64url.max(1366),
  type: z.literal('public-key'),
  response: z.object({
    clientDataJSON: base64url,
    authenticatorData: base64url,
    signature: base64url,
    userHandle: base64url.max(512).optional(),
  }),
  authenticatorAttachment: z.enum(['platform', 'cross-platform']).optional(),
  clientExtensionResults: z.record(z.string(), z.unknown()).default({}),
});

function parseJson<T>(schema: z.ZodType<T>, text: string): T | undefined {
  try {
    const parsed = schema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export function parseRegistrationResponse(text: string): RegistrationResponseJSON | undefined {
  return parseJson(registrationSchema, text);
}

export function parseAuthenticationResponse(text: string): AuthenticationResponseJSON | undefined {
  return parseJson(authenticationSchema, text);
}

export function registrationOptions(rp: RelyingParty, user: UserRecord, existing: PasskeyRecord[]): Promise<PublicKeyCredentialCreationOptionsJSON> {
  return generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userName: user.username,
    userID: Buffer.from(user.id, 'utf8'),
    userDisplayName: user.name ?? user.username,
    timeout: ceremonyTimeoutMs,
    attestationType: 'none',
    // One passkey per authenticator: registering the same one twice would only confuse the list.
    excludeCredentials: existing.map((p) => ({ id: p.id, transports: p.transports })),
    authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
    // ES256 and RS256 (Windows Hello), as browsers and authenticators support them.
    supportedAlgorithmIDs: [-7, -257],
  });
}

export interface RegisteredPasskey {
  id: string;
  publicKey: string;
  counter: number;
  transports: string[];
  backedUp: boolean;
}

export async function verifyRegistration(
  rp: RelyingParty,
  response: RegistrationResponseJSON,
  expectedChallenge: string,
): Promise<RegisteredPasskey | undefined> {
  try {
    const verified = await verifyRegistrationResponse({
      response,
      expectedChallenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      requireUserVerification: true,
      supportedAlgorithmIDs: [-7, -257],
    });
    if (!verified.verified) return undefined;
    const { credential, credentialBackedUp } = verified.registrationInfo;
    return {
      id: credential.id,
      publicKey: Buffer.from(credential.publicKey).toString('base64url'),
      counter: credential.counter,
      transports: (response.response.transports ?? []).slice(0, 10),
      backedUp: credentialBackedUp,
    };
  } catch {
    // A wrong challenge, origin or RP id, a malformed attestation: not a passkey we take.
    return undefined;
  }
}

/** `allow`: the person's passkeys (second step); none for a sign-in without a username. */
export function authenticationOptions(rp: RelyingParty, allow: PasskeyRecord[] | undefined): Promise<PublicKeyCredentialRequestOptionsJSON> {
  return generateAuthenticationOptions({
    rpID: rp.id,
    timeout: ceremonyTimeoutMs,
    ...(allow === undefined ? {} : { allowCredentials: allow.map((p) => ({ id: p.id, transports: p.transports })) }),
    // Alone, a passkey must be two factors; after a password, possession is the second.
    userVerification: allow === undefined ? 'required' : 'preferred',
  });
}

export interface VerifiedAssertion {
  newCounter: number;
  userVerified: boolean;
}

export async function verifyAuthentication(
  rp: RelyingParty,
  response: AuthenticationResponseJSON,
  expectedChallenge: string,
  passkey: PasskeyRecord,
  requireUserVerification: boolean,
): Promise<VerifiedAssertion | undefined> {
  try {
    const verified = await verifyAuthenticationResponse({
      response,
      expectedChallenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      credential: { id: passkey.id, publicKey: Buffer.from(passkey.publicKey, 'base64url'), counter: passkey.counter, transports: passkey.transports },
      requireUserVerification,
    });
    if (!verified.verified) return undefined;
    return { newCounter: verified.authenticationInfo.newCounter, userVerified: verified.authenticationInfo.userVerified };
  } catch {
    // A bad signature, a counter that went backwards (a cloned key), another origin: refused.
    return undefined;
  }
}
