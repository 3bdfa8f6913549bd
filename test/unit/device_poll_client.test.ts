/**
 * The CLI's device-code polling against a scripted token endpoint on a real local socket: every
 * wait it asks for is recorded (the clock is manual), so the interval rules are checked exactly.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { manualClock } from '../../src/clock.js';
import { pollForTokens, retryAfterMs, safetyMarginMs } from '../../src/cli/client/device_poll.js';

type Answer = { status: number; body: Record<string, unknown>; headers?: Record<string, string> };
let server: Server | undefined;
afterEach(() => server?.close());

async function scriptedEndpoint(answers: Answer[]): Promise<{ url: string; requests: URLSearchParams[] }> {
  const requests: URLSearchParams[] = [];
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer | string) => (body += d.toString()));
    req.on('end', () => {
      requests.push(new URLSearchParams(body));
      const answer = answers.shift() ?? { status: 500, body: { error: 'script_exhausted' } };
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers }).end(JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/oauth/token`, requests };
}

function run(url: string, options: { interval?: number; expiresIn?: number } = {}) {
  const clock = manualClock(1_800_000_000);
  const waits: number[] = [];
  const outcome = pollForTokens({
    tokenEndpoint: url,
    clientId: 'latchkey-cli',
    deviceCode: 'lk_dc_x',
    intervalSeconds: options.interval ?? 5,
    expiresInSeconds: options.expiresIn ?? 900,
    signal: new AbortController().signal,
    clock,
    sleep: async (ms) => {
      waits.push(ms);
      clock.advance(ms / 1000);
    },
  });
  return { outcome, waits };
}

const pending = { status: 400, body: { error: 'authorization_pending' } };

describe('pollForTokens', () => {
  it('waits the interval plus a small margin between polls and returns the tokens', async () => {
    const { url, requests } = await scriptedEndpoint([pending, pending, { status: 200, body: { access_token: 'at', token_type: 'Bearer' } }]);
    const { outcome, waits } = run(url);
    expect(await outcome).toEqual({ kind: 'tokens', body: { access_token: 'at', token_type: 'Bearer' } });
    expect(waits).toEqual([5000 + safetyMarginMs, 5000 + safetyMarginMs, 5000 + safetyMarginMs]);
    expect(requests[0]!.get('grant_type')).toBe('urn:ietf:params:oauth:grant-type:device_code');
    expect(requests[0]!.get('device_code')).toBe('lk_dc_x');
    expect(requests[0]!.get('client_id')).toBe('latchkey-cli');
  });

  it('adds 5 s on every slow_down and keeps going', async () => {
    const slow = { status: 400, body: { error: 'slow_down' } };
    const { url } = await scriptedEndpoint([slow, slow, pending, { status: 200, body: { access_token: 'at' } }]);
    const { outcome, waits } = run(url);
    expect((await outcome).kind).toBe('tokens');
    expect(waits.map((w) => w - safetyMarginMs)).toEqual([5000, 10000, 15000, 15000]);
  });

  it('honours Retry-After on 429', async () => {
    const { url } = await scriptedEndpoint([
      { status: 429, body: { error: 'temporarily_unavailable' }, headers: { 'retry-after': '30' } },
      { status: 200, body: { access_token: 'at' } },
    ]);
    const { outcome, waits } = run(url);
    expect((await outcome).kind).toBe('tokens');
    expect(waits.map((w) => w - safetyMarginMs)).toEqual([5000, 30000]);
  });

  it('access_denied → denied; expired_token → expired; anything else → failed with the server’s words', async () => {
    for (const [answer, expected] of [
      [{ status: 400, body: { error: 'access_denied' } }, { kind: 'denied' }],
      [{ status: 400, body: { error: 'expired_token' } }, { kind: 'expired' }],
      [
        { status: 400, body: { error: 'invalid_grant', error_description: 'The device code is invalid.' } },
        { kind: 'failed', message: 'invalid_grant: The device code is invalid.' },
      ],
    ] as const) {
      server?.close();
      const { url } = await scriptedEndpoint([answer]);
      expect(await run(url).outcome).toEqual(expected);
    }
  });

  it('stops by itself once the code has expired', async () => {
    const { url } = await scriptedEndpoint(Array.from({ length: 20 }, () => pending));
    const { outcome, waits } = run(url, { interval: 5, expiresIn: 30 });
    expect(await outcome).toEqual({ kind: 'expired' });
    expect(waits.length).toBeLessThanOrEqual(8);
  });

  it('an abort stops it', async () => {
    const { url } = await scriptedEndpoint([pending]);
    const controller = new AbortController();
    controller.abort();
    const outcome = await pollForTokens({
      tokenEndpoint: url,
      clientId: 'c',
      deviceCode: 'd',
      intervalSeconds: 1,
      expiresInSeconds: 60,
      signal: controller.signal,
      sleep: async () => undefined,
    });
    expect(outcome).toEqual({ kind: 'aborted' });
  });
});

describe('Retry-After', () => {
  it('is honoured on every answer, never below the interval, in seconds or as an HTTP date', async () => {
    // The third answer comes at t0 + 35.75 s (5.25 + 20.25 + 10.25); this date is 30.25 s after it.
    const inThirty = new Date((1_800_000_000 + 66) * 1000).toUTCString();
    const { url } = await scriptedEndpoint([
      { status: 400, body: { error: 'slow_down' }, headers: { 'retry-after': '20' } },
      { status: 400, body: { error: 'authorization_pending' }, headers: { 'retry-after': '2' } },
      { status: 400, body: { error: 'authorization_pending' }, headers: { 'retry-after': inThirty } },
      { status: 200, body: { access_token: 'at' } },
    ]);
    const { outcome, waits } = run(url);
    expect((await outcome).kind).toBe('tokens');
    expect(waits.map((w) => Math.round((w - safetyMarginMs) / 1000))).toEqual([5, 20, 10, 30]);
  });

  it('retryAfterMs reads seconds and dates, and ignores nonsense', () => {
    expect(retryAfterMs('7', 0)).toBe(7000);
    expect(retryAfterMs(new Date(61_000).toUTCString(), 1_000)).toBe(60_000);
    expect(retryAfterMs('soon', 0)).toBeUndefined();
    expect(retryAfterMs(null, 0)).toBeUndefined();
  });
});
