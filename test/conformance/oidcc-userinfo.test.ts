/**
 * Basic OP plan, the UserInfo endpoint: oidcc-userinfo-get, oidcc-userinfo-post-header,
 * oidcc-userinfo-post-body (AbstractOIDCCUserInfoTest: after the code flow, a second userinfo call
 * the module's way — 200, application/json, a JSON object with sub and well-typed claims).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeFlow, issuer, opFetch, startOp, Tester, userinfo, type Op, type UserinfoMethod } from './suite.js';

let op: Op;
beforeAll(async () => {
  op = await startOp();
});
afterAll(async () => {
  await op?.close();
});

const modules: [string, UserinfoMethod][] = [
  ['oidcc-userinfo-get', 'get'],
  ['oidcc-userinfo-post-header', 'post-header'],
  ['oidcc-userinfo-post-body', 'post-body'],
];

for (const [module, method] of modules) {
  describe(module, () => {
    it(`userinfo by ${method}: 200, application/json, sub of the id_token`, async () => {
      const { tokens } = await codeFlow(op, new Tester(op), { extras: { scope: 'openid email' } });
      const claims = await userinfo(op, tokens, method);
      expect(claims.sub).toBe(tokens.claims.sub);
      expect(claims.email).toBe('buffy@example.test');
    });
  });
}

describe('userinfo abuse cases (RFC 6750 §2, §3)', () => {
  it('the token both in the header and the body is invalid_request; none is a bare challenge; a bad one invalid_token', async () => {
    const { tokens } = await codeFlow(op, new Tester(op));
    const both = await opFetch(op, `${issuer}/userinfo`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.accessToken}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ access_token: tokens.accessToken }).toString(),
    });
    expect(both.status).toBe(400);
    expect((await both.json()).error).toBe('invalid_request');

    const none = await opFetch(op, `${issuer}/userinfo`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer realm="latchkey"/);

    const forged = await opFetch(op, `${issuer}/userinfo`, { headers: { authorization: `Bearer ${tokens.accessToken.slice(0, -4)}AAAA` } });
    expect(forged.status).toBe(401);
    expect(forged.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });
});
