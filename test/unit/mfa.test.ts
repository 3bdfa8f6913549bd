/**
 * The pure logic of second factors, with a frozen clock: TOTP windows, drift and replay
 * (the step a code belongs to, and the store refusing that step twice), recovery codes, how amr
 * becomes acr, what acr_values asks for, passkey names and the LATCHKEY_MFA setting.
 */
import { describe, expect, it } from 'vitest';
import * as OTPAuth from 'otpauth';
import { ConfigError, configFrom } from '../../src/config.js';
import { OAuthError } from '../../src/errors.js';
import { acrOf, asksForMfa, authenticationClaims, isMultiFactor, mfaAcr, singleFactorAcr, withMethods } from '../../src/mfa/amr.js';
import { hasSecondFactor, requestedAcrValues, stepUpPath } from '../../src/mfa/policy.js';
import { newRecoveryCodes, normalizeRecoveryCode, recoveryCodeCount, recoveryCodeDigest } from '../../src/mfa/recovery_codes.js';
import { newTotpSecret, normalizeTotpCode, spacedSecret, totpCodeAt, totpPeriod, totpStepOf, totpUri } from '../../src/mfa/totp.js';
import { passkeyName } from '../../src/mfa/passkey_name.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite_store.js';
import { addUser } from '../helpers/app.js';

// RFC 6238 Appendix B's SHA-1 key, "12345678901234567890", in base32.
const rfcSecret = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ';
// A frozen clock: the first second of a 30-second step.
const frozen = 1_800_000_010 - (1_800_000_010 % totpPeriod);
const step = frozen / totpPeriod;

describe('TOTP', () => {
  it('matches RFC 6238 Appendix B (SHA-1, the last 6 of the 8 digits)', () => {
    expect(totpCodeAt(rfcSecret, 59)).toBe('287082');
    expect(totpCodeAt(rfcSecret, 1111111109)).toBe('081804');
    expect(totpCodeAt(rfcSecret, 1234567890)).toBe('005924');
    expect(totpCodeAt(rfcSecret, 2000000000)).toBe('279037');
  });

  it('a code belongs to its 30-second step, from its first second to its last', () => {
    const code = totpCodeAt(rfcSecret, frozen);
    expect(totpStepOf(rfcSecret, code, frozen)).toBe(step);
    expect(totpStepOf(rfcSecret, code, frozen + 29.999)).toBe(step);
    expect(totpCodeAt(rfcSecret, frozen + 29)).toBe(code);
    expect(totpCodeAt(rfcSecret, frozen + 30)).not.toBe(code);
  });

  it('accepts one step of drift either way, and not two', () => {
    const code = totpCodeAt(rfcSecret, frozen);
    // The server's clock a step ahead of the phone, or a step behind.
    expect(totpStepOf(rfcSecret, code, frozen + totpPeriod)).toBe(step);
    expect(totpStepOf(rfcSecret, code, frozen - totpPeriod)).toBe(step);
    expect(totpStepOf(rfcSecret, code, frozen + 2 * totpPeriod)).toBeUndefined();
    expect(totpStepOf(rfcSecret, code, frozen - 2 * totpPeriod)).toBeUndefined();
    // The step returned is the code's own, not the server's: that is what replay is judged on.
    expect(totpStepOf(rfcSecret, totpCodeAt(rfcSecret, frozen + totpPeriod), frozen)).toBe(step + 1);
  });

  it('a wrong or malformed code is no step; spaces and a dash are allowed', () => {
    const code = totpCodeAt(rfcSecret, frozen);
    const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
    expect(totpStepOf(rfcSecret, wrong, frozen)).toBeUndefined();
    expect(totpStepOf(rfcSecret, `${code.slice(0, 3)} ${code.slice(3)}`, frozen)).toBe(step);
    expect(totpStepOf(rfcSecret, `${code.slice(0, 3)}-${code.slice(3)}`, frozen)).toBe(step);
    for (const typed of ['', '12345', '1234567', 'abcdef', '12345a', '１２３４５６', '123456\n7']) expect(normalizeTotpCode(typed)).toBeUndefined();
    expect(normalizeTotpCode(' 123 456 ')).toBe('123456');
  });

  it('a code is single use: the store accepts each step once, and never an earlier one', () => {
    const store = new SqliteStore({ path: ':memory:', now: frozen });
    return (async () => {
      const user = await addUser(store, 'alice', 'alice-password');
      await store.saveTotp({ userId: user.id, secret: 'sealed', lastStep: 0, createdAt: frozen });
      const code = totpCodeAt(rfcSecret, frozen);
      const matched = totpStepOf(rfcSecret, code, frozen)!;
      expect(await store.useTotpStep(user.id, matched)).toBe(true);
      // The same code again, still inside its window (and inside the drift of the next step).
      expect(totpStepOf(rfcSecret, code, frozen + 20)).toBe(matched);
      expect(await store.useTotpStep(user.id, matched)).toBe(false);
      expect(totpStepOf(rfcSecret, code, frozen + totpPeriod)).toBe(matched);
      expect(await store.useTotpStep(user.id, matched)).toBe(false);
      // The code of the step before, which drift would otherwise let in, is older: refused too.
      expect(await store.useTotpStep(user.id, matched - 1)).toBe(false);
      expect(await store.useTotpStep(user.id, matched + 1)).toBe(true);
      expect(await store.useTotpStep('nobody', matched + 2)).toBe(false);
      await store.close();
    })();
  });

  it('secrets are 160 random bits in base32, shown in groups of four; the URI is what apps read', () => {
    const secret = newTotpSecret();
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(newTotpSecret()).not.toBe(secret);
    expect(spacedSecret('ABCDEFGHIJKL')).toBe('ABCD EFGH IJKL');
    const uri = totpUri(rfcSecret, 'alice', 'Latchkey');
    const parsed = OTPAuth.URI.parse(uri) as OTPAuth.TOTP;
    expect(uri).toMatch(/^otpauth:\/\/totp\/Latchkey:alice\?/);
    expect(parsed).toMatchObject({ issuer: 'Latchkey', label: 'alice', algorithm: 'SHA1', digits: 6, period: 30 });
    expect(parsed.secret.base32).toBe(rfcSecret);
  });
});

describe('recovery codes', () => {
  it('ten distinct codes of 10 characters without look-alikes, written xxxxx-xxxxx', () => {
    const codes = newRecoveryCodes();
    expect(codes).toHaveLength(recoveryCodeCount);
    expect(new Set(codes).size).toBe(recoveryCodeCount);
    for (const code of codes) {
      expect(code).toMatch(/^[a-z2-9]{5}-[a-z2-9]{5}$/);
      expect(code).not.toMatch(/[01ilo]/);
    }
  });

  it('typed in any case, with or without the dash or spaces, they are the same code; anything else is not one', () => {
    expect(normalizeRecoveryCode('abcde-fghjk')).toBe('abcdefghjk');
    expect(normalizeRecoveryCode('ABCDE FGHJK')).toBe('abcdefghjk');
    expect(normalizeRecoveryCode('abcdefghjk')).toBe('abcdefghjk');
    for (const typed of ['', 'abcde-fghj', 'abcde-fghjkm', 'abcde-fghj1', 'abcde_fghjk', '123456']) expect(normalizeRecoveryCode(typed)).toBeUndefined();
  });

  it('stored as a keyed digest bound to the person: another key or another person gives another digest', () => {
    const digest = recoveryCodeDigest('key-1', 'user-1', 'abcdefghjk');
    expect(digest).toBe(recoveryCodeDigest('key-1', 'user-1', 'abcdefghjk'));
    expect(digest).not.toContain('abcdefghjk');
    expect(recoveryCodeDigest('key-2', 'user-1', 'abcdefghjk')).not.toBe(digest);
    expect(recoveryCodeDigest('key-1', 'user-2', 'abcdefghjk')).not.toBe(digest);
  });
});

describe('amr and acr', () => {
  it('two kinds of proof are multi-factor; a user-verified passkey alone is too; anything less is not', () => {
    expect(isMultiFactor(['pwd', 'otp'])).toBe(true);
    expect(isMultiFactor(['fed', 'otp'])).toBe(true);
    expect(isMultiFactor(['pwd', 'hwk', 'user'])).toBe(true);
    expect(isMultiFactor(['hwk', 'user'])).toBe(true);
    expect(isMultiFactor(['hwk'])).toBe(false);
    expect(isMultiFactor(['pwd'])).toBe(false);
    expect(isMultiFactor(['otp'])).toBe(false);
    expect(isMultiFactor([])).toBe(false);
    expect(acrOf(['pwd', 'otp'])).toBe(mfaAcr);
    expect(acrOf(['pwd'])).toBe(singleFactorAcr);
  });

  it('methods are added once each, in the order first used; claims leave amr out when nothing is known', () => {
    expect(withMethods(['pwd'], ['otp'])).toEqual(['pwd', 'otp']);
    expect(withMethods(['pwd', 'otp'], ['otp'])).toEqual(['pwd', 'otp']);
    expect(authenticationClaims(['pwd', 'otp'])).toEqual({ amr: ['pwd', 'otp'], acr: mfaAcr });
    expect(authenticationClaims([])).toEqual({ acr: singleFactorAcr });
  });

  it('acr_values asks for a second factor only with urn:latchkey:mfa among its values; off refuses such a request', () => {
    expect(asksForMfa('urn:latchkey:mfa')).toBe(true);
    expect(asksForMfa('urn:other urn:latchkey:mfa')).toBe(true);
    expect(asksForMfa('urn:latchkey:mfa2')).toBe(false);
    expect(asksForMfa(undefined)).toBe(false);
    // Levels in order of preference (OIDC Core §3.1.2.1): listing the single-factor level accepts it.
    expect(asksForMfa('urn:latchkey:sfa urn:latchkey:mfa')).toBe(false);
    expect(asksForMfa('urn:latchkey:mfa urn:latchkey:sfa')).toBe(false);
    const optional = configFrom({ LATCHKEY_ISSUER: 'http://latchkey.test' });
    expect(requestedAcrValues(optional, 'urn:other urn:latchkey:mfa')).toBe(mfaAcr);
    expect(requestedAcrValues(optional, 'urn:latchkey:sfa')).toBe('');
    const off = configFrom({ LATCHKEY_ISSUER: 'http://latchkey.test', LATCHKEY_MFA: 'off' });
    expect(requestedAcrValues(off, 'urn:latchkey:sfa')).toBe('');
    expect(requestedAcrValues(off, 'urn:latchkey:sfa urn:latchkey:mfa')).toBe('');
    expect(() => requestedAcrValues(off, 'urn:latchkey:mfa')).toThrow(OAuthError);
    try {
      requestedAcrValues(off, mfaAcr);
    } catch (err) {
      expect((err as OAuthError).code).toBe('unmet_authentication_requirements');
    }
  });

  it('recovery codes alone are not a factor; the step-up address carries where to go back to', () => {
    expect(hasSecondFactor({ totp: false, passkeys: 0, recoveryCodes: 10 })).toBe(false);
    expect(hasSecondFactor({ totp: true, passkeys: 0, recoveryCodes: 0 })).toBe(true);
    expect(hasSecondFactor({ totp: false, passkeys: 1, recoveryCodes: 0 })).toBe(true);
    expect(stepUpPath('/authorize?a=1&b=2')).toBe('/login/second-factor?return_to=%2Fauthorize%3Fa%3D1%26b%3D2');
  });
});

describe('passkey names and LATCHKEY_MFA', () => {
  it('names are trimmed, 1-64 characters, without control, format or line-separator characters', () => {
    expect(passkeyName('  MacBook Touch ID ', 'x')).toBe('MacBook Touch ID');
    expect(passkeyName('', 'Passkey added 2026-11-23')).toBe('Passkey added 2026-11-23');
    expect(passkeyName('Clé de sécurité 🔑', 'x')).toBe('Clé de sécurité 🔑');
    expect(passkeyName('x'.repeat(64), 'x')).toHaveLength(64);
    for (const bad of ['x'.repeat(65), 'a\u0000b', 'a\nb', 'a\u202eb', 'a\u200bb', 'a\u2028b']) expect(passkeyName(bad, 'x')).toBeUndefined();
  });

  it('LATCHKEY_ID_TOKEN_SCOPE_CLAIMS is basic (the default) or none; anything else stops the server', () => {
    expect(configFrom({ LATCHKEY_ISSUER: 'http://latchkey.test' }).idTokenScopeClaims).toBe('basic');
    expect(configFrom({ LATCHKEY_ISSUER: 'http://latchkey.test', LATCHKEY_ID_TOKEN_SCOPE_CLAIMS: 'none' }).idTokenScopeClaims).toBe('none');
    for (const bad of ['all', 'NONE', 'off']) {
      expect(() => configFrom({ LATCHKEY_ISSUER: 'http://latchkey.test', LATCHKEY_ID_TOKEN_SCOPE_CLAIMS: bad }), bad).toThrow(ConfigError);
    }
  });

  it('LATCHKEY_MFA is off, optional (the default) or required; anything else stops the server', () => {
    expect(configFrom({ LATCHKEY_ISSUER: 'http://latchkey.test' }).mfa).toBe('optional');
    for (const mode of ['off', 'optional', 'required'] as const)
      expect(configFrom({ LATCHKEY_ISSUER: 'http://latchkey.test', LATCHKEY_MFA: mode }).mfa).toBe(mode);
    for (const bad of ['on', 'REQUIRED', 'true', 'none']) {
      expect(() => configFrom({ LATCHKEY_ISSUER: 'http://latchkey.test', LATCHKEY_MFA: bad }), bad).toThrow(ConfigError);
    }
  });
});
