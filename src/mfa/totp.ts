/**
 * TOTP (RFC 6238) as every authenticator app reads it: SHA-1, 6 digits, 30-second steps, a 160-bit
 * secret (RFC 4226 §4 recommends at least 128), through `otpauth` (maintained, no dependencies).
 * A code is accepted for the current step or one step either side (clock drift, a code typed as it
 * changed); which step it matched is returned so the caller can refuse that step, or an earlier
 * one, a second time (store.useTotpStep): a code seen over someone's shoulder is spent.
 */
import * as OTPAuth from 'otpauth';

export const totpPeriod = 30;
export const totpDigits = 6;
const driftSteps = 1;

export function newTotpSecret(): string {
  return new OTPAuth.Secret({ size: 20 }).base32;
}

function totp(secret: string, account = '', issuer = ''): OTPAuth.TOTP {
  return new OTPAuth.TOTP({ issuer, label: account, algorithm: 'SHA1', digits: totpDigits, period: totpPeriod, secret: OTPAuth.Secret.fromBase32(secret) });
}

/** The `otpauth://totp/…` address an app reads from the QR code (issuer both as prefix and parameter, as apps expect). */
export function totpUri(secret: string, account: string, issuer: string): string {
  return totp(secret, account, issuer).toString();
}

/** What a person types: digits, maybe with spaces or a dash in the middle ("123 456"). */
export function normalizeTotpCode(typed: string): string | undefined {
  const code = typed.replace(/[\s-]/g, '');
  return new RegExp(`^\\d{${totpDigits}}$`).test(code) ? code : undefined;
}

/** The time step the code belongs to (within ±1 of `nowSeconds`), or undefined when it is wrong. */
export function totpStepOf(secret: string, code: string, nowSeconds: number): number | undefined {
  const normalized = normalizeTotpCode(code);
  if (normalized === undefined) return undefined;
  const timestamp = Math.floor(nowSeconds * 1000);
  const delta = totp(secret).validate({ token: normalized, timestamp, window: driftSteps });
  return delta === null ? undefined : Math.floor(nowSeconds / totpPeriod) + delta;
}

/** The code of `nowSeconds` (tests, and nothing else: the server never shows a code). */
export function totpCodeAt(secret: string, nowSeconds: number): string {
  return totp(secret).generate({ timestamp: Math.floor(nowSeconds * 1000) });
}

/** The secret as people type it into an app without a camera: groups of four. */
export function spacedSecret(secret: string): string {
  return secret.replace(/(.{4})/g, '$1 ').trim();
}
