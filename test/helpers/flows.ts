/**
 * Getting real tokens in route tests: the device flow through the real endpoints, with the
 * person's approval recorded in the store (the pages have their own tests).
 */
import { expect } from 'vitest';
import { normalizeUserCode, userCodeDigest } from '../../src/oauth/user_code.js';
import type { UserRecord } from '../../src/store/store.js';
import { deviceGrantType, form, type TestApp } from './app.js';

export interface Tokens {
  access_token: string;
  refresh_token?: string;
  scope: string;
  expires_in: number;
}

export async function tokensFor(
  t: TestApp,
  user: UserRecord,
  clientId: string,
  options: { scope?: string; audience?: string; clientSecret?: string } = {},
): Promise<Tokens> {
  const auth: Record<string, string> = options.clientSecret ? { client_secret: options.clientSecret } : {};
  const start = form({
    client_id: clientId,
    scope: options.scope ?? 'openid email profile offline_access',
    ...(options.audience ? { audience: options.audience } : {}),
    ...auth,
  });
  const device = (await t.app.inject({ method: 'POST', url: '/oauth/device/code', ...start })).json();
  expect(device.user_code).toBeDefined();
  const grant = await t.store.findDeviceGrantByUserCode(userCodeDigest(t.app.services.userCodeKey, normalizeUserCode(device.user_code)!));
  await t.store.approveDeviceGrant(grant!.id, user.id, Math.floor(t.clock()), ['pwd'], Math.floor(t.clock()));
  const poll = form({ grant_type: deviceGrantType, device_code: device.device_code, client_id: clientId, ...auth });
  const res = await t.app.inject({ method: 'POST', url: '/oauth/token', ...poll });
  expect(res.statusCode).toBe(200);
  return res.json();
}

export function refresh(t: TestApp, clientId: string, refreshToken: string, extra: Record<string, string> = {}) {
  const f = form({ grant_type: 'refresh_token', client_id: clientId, refresh_token: refreshToken, ...extra });
  return t.app.inject({ method: 'POST', url: '/oauth/token', ...f });
}
