import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { newSealedSigningKey } from '../../src/crypto/signer.js';
import type { UserRecord } from '../../src/store/store.js';
import { addClient, addUser, testApp, type TestApp } from '../helpers/app.js';
import { tokensFor } from '../helpers/flows.js';

let t: TestApp;
let alice: UserRecord;

beforeEach(async () => {
  t = await testApp({ LATCHKEY_ACCESS_TOKEN_TTL: '7200' });
  alice = await addUser(t.store, 'alice');
  await addClient(t.store, 'cli');
});
afterEach(() => t.close());

const jwks = async () => (await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json<{ keys: { kid: string }[] }>();
const kids = async () => (await jwks()).keys.map((k) => k.kid);

/** What `latchkey keys rotate` does, from another process: a new key, sealed, straight to the store. */
async function rotateElsewhere(): Promise<string> {
  const key = newSealedSigningKey(t.app.services.secretBox, 'RS256', Math.floor(t.clock()));
  await t.store.rotateSigningKeys([key], Math.floor(t.clock()));
  return key.kid;
}

describe('signing key rotation', () => {
  it('a rotation by another process is active within a second; tokens signed before keep verifying', async () => {
    const before = await tokensFor(t, alice, 'cli');
    const oldKid = decodeProtectedHeader(before.access_token).kid;
    const newKid = await rotateElsewhere();
    t.clock.advance(1);
    expect(await kids()).toEqual([newKid, oldKid]);
    const after = await tokensFor(t, alice, 'cli');
    expect(decodeProtectedHeader(after.access_token).kid).toBe(newKid);

    const keySet = createLocalJWKSet(await jwks());
    for (const token of [before.access_token, after.access_token]) {
      await jwtVerify(token, keySet, { issuer: 'http://latchkey.test', currentDate: new Date(t.clock() * 1000) });
      const res = await t.app.inject({ method: 'GET', url: '/userinfo', headers: { authorization: `Bearer ${token}` } });
      expect(res.statusCode).toBe(200);
    }
  });

  it('the retired key leaves the JWKS once every token it signed has expired', async () => {
    const before = await tokensFor(t, alice, 'cli');
    const oldKid = decodeProtectedHeader(before.access_token).kid;
    const newKid = await rotateElsewhere();
    t.clock.advance(7259); // access-token lifetime plus a minute of skew
    expect(await kids()).toEqual([newKid, oldKid]);
    t.clock.advance(1);
    expect(await kids()).toEqual([newKid]);
  });

  it('the retention is at least an hour (id_tokens) plus a minute, even with short access tokens', async () => {
    await t.close();
    t = await testApp({ LATCHKEY_ACCESS_TOKEN_TTL: '60' });
    const oldKid = (await kids())[0];
    const newKid = await rotateElsewhere();
    t.clock.advance(3659);
    expect(await kids()).toEqual([newKid, oldKid]);
    t.clock.advance(1);
    expect(await kids()).toEqual([newKid]);
  });
});
