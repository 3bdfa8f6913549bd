/**
 * Basic OP plan, claims by scope (AbstractOIDCCReturnedClaimsServerTest): oidcc-scope-profile,
 * oidcc-scope-email, oidcc-scope-address, oidcc-scope-phone, oidcc-scope-all,
 * oidcc-ensure-other-scope-order-succeeds. Each module is skipped unless discovery's
 * scopes_supported lists its scopes; userinfo must hold every claim of each scope
 * (VerifyScopesReturnedInUserInfoClaims), with the id_token's sub, and nothing of other scopes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeFlow, discoveryUrl, opFetch, personProfile, startOp, Tester, userinfo, type Op } from './suite.js';

let op: Op;
beforeAll(async () => {
  op = await startOp();
});
afterAll(async () => {
  await op?.close();
});

const scopeClaims: Record<string, string[]> = {
  openid: ['sub'],
  profile: [
    'name',
    'given_name',
    'family_name',
    'middle_name',
    'nickname',
    'profile',
    'picture',
    'website',
    'gender',
    'birthdate',
    'zoneinfo',
    'locale',
    'updated_at',
    'preferred_username',
  ],
  email: ['email', 'email_verified'],
  address: ['address'],
  phone: ['phone_number', 'phone_number_verified'],
};

async function expectScopeClaims(scope: string): Promise<{ info: Record<string, unknown>; idClaims: Record<string, unknown> }> {
  const metadata = (await (await opFetch(op, discoveryUrl)).json()) as { scopes_supported: string[] };
  // OIDCCCheckScopesSupportedContainScopeTest: otherwise the module is SKIPPED.
  expect(metadata.scopes_supported).toEqual(expect.arrayContaining(scope.split(' ')));
  const { tokens } = await codeFlow(op, new Tester(op), { extras: { scope } });
  const info = await userinfo(op, tokens);
  // VerifyUserInfoAndIdTokenInTokenEndpointSameSub.
  expect(info.sub).toBe(tokens.claims.sub);
  const expected = scope.split(' ').flatMap((s) => scopeClaims[s] ?? []);
  // VerifyScopesReturnedInUserInfoClaims: every claim of every requested scope…
  expect(Object.keys(info).sort()).toStrictEqual([...new Set(expected)].sort());
  return { info, idClaims: tokens.claims };
}

describe('oidcc-scope-profile', () => {
  it('scope=openid profile: all fourteen profile claims at userinfo', async () => {
    const { info } = await expectScopeClaims('openid profile');
    expect(info).toMatchObject({
      name: 'Buffy Summers',
      given_name: 'Buffy',
      family_name: 'Summers',
      preferred_username: 'buffy',
      birthdate: '1981-01-19',
      zoneinfo: 'America/Los_Angeles',
      locale: 'en-US',
      updated_at: 1_790_000_000,
    });
  });
});

describe('oidcc-scope-email', () => {
  it('scope=openid email: email and email_verified, and no name (EnsureUserInfoDoesNotContainName)', async () => {
    const { info } = await expectScopeClaims('openid email');
    expect(info).toStrictEqual({ sub: info.sub, email: 'buffy@example.test', email_verified: true });
  });
});

describe('oidcc-scope-address', () => {
  it('scope=openid address: the address object', async () => {
    const { info } = await expectScopeClaims('openid address');
    expect(info.address).toStrictEqual(personProfile.address);
  });
});

describe('oidcc-scope-phone', () => {
  it('scope=openid phone: phone_number and a boolean phone_number_verified', async () => {
    const { info } = await expectScopeClaims('openid phone');
    expect(info).toMatchObject({ phone_number: '+1 (805) 555-0100', phone_number_verified: true });
  });
});

describe('oidcc-scope-all', () => {
  it('scope=openid email phone address profile: every claim of the four scopes', async () => {
    await expectScopeClaims('openid email phone address profile');
  });
});

describe('oidcc-ensure-other-scope-order-succeeds', () => {
  it('scope=email openid (ReverseScopeOrderInAuthorizationEndpointRequest): an id_token and the email claims', async () => {
    const { info } = await expectScopeClaims('email openid');
    expect(info.email).toBe('buffy@example.test');
  });
});

describe('id_token claims by scope (EnsureIdTokenDoesNotContainName, EnsureIdTokenDoesNotContainEmailForScopeEmail)', () => {
  it('by default id_tokens keep the contract: email/email_verified and name/preferred_username for those scopes, nothing of address or phone', async () => {
    const { idClaims } = await expectScopeClaims('openid email phone address profile');
    expect(idClaims).toMatchObject({ email: 'buffy@example.test', email_verified: true, name: 'Buffy Summers', preferred_username: 'buffy' });
    for (const claim of ['address', 'phone_number', 'given_name', 'birthdate', 'updated_at']) expect(idClaims[claim]).toBeUndefined();
  });

  it('with LATCHKEY_ID_TOKEN_SCOPE_CLAIMS=none the scopes\u2019 claims are only at userinfo (OIDC Core §5.4): no warnings', async () => {
    const strict = await startOp({ LATCHKEY_ID_TOKEN_SCOPE_CLAIMS: 'none' });
    try {
      const { tokens } = await codeFlow(strict, new Tester(strict), { extras: { scope: 'email openid profile' } });
      expect(tokens.claims.email).toBeUndefined();
      expect(tokens.claims.name).toBeUndefined();
      expect((await userinfo(strict, tokens)).email).toBe('buffy@example.test');
    } finally {
      await strict.close();
    }
  });
});
