/**
 * DPoP end to end as a relying party meets it: openid-client v6 pushes the
 * authorization request (PAR), runs the code flow with a DPoP key, reads userinfo and refreshes,
 * each request carrying a fresh proof and the server's nonce. Then what an attacker holding a
 * copy would try: a replayed proof, a proof for another URL, and the bound token as Bearer — all
 * refused over a real socket.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as client from 'openid-client';
import { decodeJwt, exportJWK, SignJWT } from 'jose';
import { randomUUID } from 'node:crypto';
import { addClient, addUser, testApp, type TestApp } from '../helpers/app.js';
import { Browser, fetchTransport, personAllows } from '../helpers/browser.js';
import { freePort } from '../helpers/process.js';

let t: TestApp;
let base: string;
let dir: string;
const redirectUri = 'https://rp.example.com/callback';

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-dpop-'));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  t = await testApp({ LATCHKEY_ISSUER: base }, { path: join(dir, 'latchkey.db') });
  await addUser(t.store, 'alice', 'alice-password');
  await addClient(t.store, 'spa', {
    name: 'Single Page App',
    redirectUris: [redirectUri],
    grantTypes: ['authorization_code', 'refresh_token'],
    firstParty: true,
  });
  await t.app.listen({ port, host: '127.0.0.1' });
});

afterEach(async () => {
  await t.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('openid-client with DPoP', () => {
  it('PAR + code flow + userinfo + refresh, every token bound to the key; attacks with a copy refused', async () => {
    // The test server's clock stands still in 2027: proofs must carry its time, as a client whose
    // clock is off would be told to (openid-client's clockSkew).
    const skew = { [client.clockSkew]: Math.floor(t.clock()) - Math.floor(Date.now() / 1000) };
    const config = await client.discovery(new URL(base), 'spa', skew, client.None(), { execute: [client.allowInsecureRequests] });
    expect(config.serverMetadata().dpop_signing_alg_values_supported).toContain('ES256');
    const keyPair = await client.randomDPoPKeyPair('ES256');
    const DPoP = client.getDPoPHandle(config, keyPair);

    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = await client.buildAuthorizationUrlWithPAR(
      config,
      {
        redirect_uri: redirectUri,
        scope: 'openid profile offline_access',
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
        nonce,
      },
      { DPoP },
    );
    // The request itself stayed out of the browser's URL: only the client and the request_uri.
    expect([...url.searchParams.keys()].sort()).toEqual(['client_id', 'request_uri']);
    const callback = await personAllows(new Browser(fetchTransport(base)), url, 'alice', 'alice-password');

    const tokens = await client.authorizationCodeGrant(
      config,
      callback,
      { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true },
      undefined,
      { DPoP },
    );
    expect(tokens.token_type).toBe('dpop');
    const bound = decodeJwt(tokens.access_token).cnf as { jkt: string };
    expect(bound.jkt).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const claims = await client.fetchUserInfo(config, tokens.access_token, tokens.claims()!.sub, { DPoP });
    expect(claims.preferred_username).toBe('alice');

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP });
    expect(refreshed.token_type).toBe('dpop');
    expect((decodeJwt(refreshed.access_token).cnf as { jkt: string }).jkt).toBe(bound.jkt);

    // The attacker's side: a copy of the token, and proofs seen on the wire.
    const asBearer = await fetch(`${base}/userinfo`, { headers: { authorization: `Bearer ${refreshed.access_token}` } });
    expect(asBearer.status).toBe(401);
    expect(asBearer.headers.get('www-authenticate')).toMatch(/^DPoP /);

    const seen: string[] = [];
    const recording: client.CustomFetch = async (input, init) => {
      const proof = new Headers(init.headers).get('dpop');
      if (proof) seen.push(proof);
      return fetch(input, init as RequestInit);
    };
    config[client.customFetch] = recording;
    await client.fetchUserInfo(config, refreshed.access_token, client.skipSubjectCheck, { DPoP });
    delete config[client.customFetch];
    const proof = seen.at(-1)!;
    const replayed = await fetch(`${base}/userinfo`, { headers: { authorization: `DPoP ${refreshed.access_token}`, dpop: proof } });
    expect(replayed.status).toBe(401);
    expect(replayed.headers.get('www-authenticate')).toContain('invalid_dpop_proof');
    // A fresh proof by the right key, with the server's nonce, but made for another URL.
    const refreshBody = new URLSearchParams({ grant_type: 'refresh_token', client_id: 'spa', refresh_token: refreshed.refresh_token! });
    const nonceProbe = await fetch(`${base}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', dpop: proof },
      body: refreshBody,
    });
    const serverNonce = nonceProbe.headers.get('dpop-nonce')!;
    const forIntrospection = await new SignJWT({
      htm: 'POST',
      htu: `${base}/oauth/introspect`,
      jti: randomUUID(),
      iat: Math.floor(t.clock()),
      nonce: serverNonce,
    })
      .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: await exportJWK(keyPair.publicKey) })
      .sign(keyPair.privateKey);
    const otherUrl = await fetch(`${base}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', dpop: forIntrospection },
      body: refreshBody,
    });
    expect(otherUrl.status).toBe(400);
    expect(((await otherUrl.json()) as { error: string }).error).toBe('invalid_dpop_proof');
    // The code itself was bound at PAR (RFC 9449 §10.1): the proof there made it so.
    expect(tokens.token_type).toBe('dpop');
    // Without the key, the bound refresh token is worthless.
    const stolenRefresh = await fetch(`${base}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', client_id: 'spa', refresh_token: refreshed.refresh_token! }),
    });
    expect(((await stolenRefresh.json()) as { error: string }).error).toBe('invalid_grant');
  });
});
