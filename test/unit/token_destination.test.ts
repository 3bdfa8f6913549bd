/** Where a stored token may go: only to the issuer it came from, for the audience it names. */
import { UnsecuredJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { CommandError } from '../../src/cli/command.js';
import type { Profile } from '../../src/cli/client/credentials.js';
import { isManagementToken, requireManagementProfile, requireProofDestination, tokenAudiences } from '../../src/cli/client/token_destination.js';

const issuer = 'https://login.example.com';

function profile(aud: string | string[] | undefined, stored: { audience?: string; issuer?: string } = {}): Profile {
  const token = aud === undefined ? 'opaque-token' : new UnsecuredJWT({ aud, iss: issuer }).encode();
  return { issuer: stored.issuer ?? issuer, client_id: 'latchkey-cli', scope: 'openid', access_token: token, token_type: 'Bearer', expires_at: 0, ...stored };
}

function refusal(run: () => void): { message: string; exitCode: number } | undefined {
  try {
    run();
  } catch (err) {
    if (err instanceof CommandError) return { message: err.message, exitCode: err.exitCode };
    throw err;
  }
  return undefined;
}

describe('tokenAudiences', () => {
  it("is the token's aud claim, else the audience the profile asked for, else the issuer's userinfo endpoint", () => {
    expect(tokenAudiences(profile(`${issuer}/api/v1`))).toEqual([`${issuer}/api/v1`]);
    expect(tokenAudiences(profile(['a', 'b']))).toEqual(['a', 'b']);
    expect(tokenAudiences(profile(undefined, { audience: 'https://api.example.com' }))).toEqual(['https://api.example.com']);
    expect(tokenAudiences(profile(undefined, { issuer: `${issuer}/` }))).toEqual([`${issuer}/userinfo`]);
  });

  it('a management token is one for {issuer}/api/v1 of its own issuer', () => {
    expect(isManagementToken(profile(`${issuer}/api/v1`))).toBe(true);
    expect(isManagementToken(profile(undefined, { audience: `${issuer}/api/v1`, issuer: `${issuer}/` }))).toBe(true);
    expect(isManagementToken(profile('https://api.example.com'))).toBe(false);
  });
});

describe('requireManagementProfile (--server with LATCHKEY_PROFILE)', () => {
  it("passes only a profile signed in at the server for the server's management API", () => {
    expect(refusal(() => requireManagementProfile(profile(`${issuer}/api/v1`, { issuer: `${issuer}/` }), 'admin', issuer))).toBeUndefined();
    const elsewhere = refusal(() => requireManagementProfile(profile(`${issuer}/api/v1`), 'admin', 'https://evil.example.com'));
    expect(elsewhere?.exitCode).toBe(6);
    expect(elsewhere?.message).toContain(
      `the profile "admin" (LATCHKEY_PROFILE) was signed in at ${issuer} for ${issuer}/api/v1, not for the management API of https://evil.example.com`,
    );
    // The server's own issuer, but a token for another audience: not the management API's.
    expect(refusal(() => requireManagementProfile(profile('https://api.example.com'), 'tools', issuer))?.message).toContain(
      `was signed in at ${issuer} for https://api.example.com, not for the management API of ${issuer}`,
    );
    // The profile says api/v1, the token another audience: the token decides.
    expect(refusal(() => requireManagementProfile(profile('https://api.example.com', { audience: `${issuer}/api/v1` }), 'x', issuer))).toBeDefined();
  });
});

describe('requireProofDestination (latchkey token --dpop-proof --url)', () => {
  it("binds a token for the issuer's own addresses only to a request there; a token for an API of its own anywhere", () => {
    const management = profile(`${issuer}/api/v1`);
    expect(refusal(() => requireProofDestination(management, 'admin', `${issuer}/api/v1/users?limit=1`))).toBeUndefined();
    for (const url of [`${issuer}/api/v10`, `${issuer}/userinfo`, 'https://evil.example.com/api/v1/users', 'http://login.example.com/api/v1/users']) {
      expect(refusal(() => requireProofDestination(management, 'admin', url))?.exitCode, url).toBe(2);
    }
    expect(refusal(() => requireProofDestination(profile(undefined), 'default', `${issuer}/userinfo`))).toBeUndefined();
    expect(refusal(() => requireProofDestination(profile('https://api.example.com'), 'tools', 'https://api-eu.example.net/things'))).toBeUndefined();
  });
});
