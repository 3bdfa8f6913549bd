import { describe, it, expect } from 'vitest';
import { decidePoll, pollJitterAllowanceMs, slowDownIncrement, type PollDecision } from '../../src/oauth/device_poll.js';
import type { DeviceGrantRecord } from '../../src/store/store.js';
import { deviceGrant } from '../helpers/records.js';

const createdAt = 1_800_000_000;
const createdMs = createdAt * 1000;
const ttl = 900;
const expiresMs = (createdAt + ttl) * 1000;

const grant = deviceGrant;

const approved: Partial<DeviceGrantRecord> = { status: 'approved', userId: 'user-1', authTime: createdAt + 10, decidedAt: createdAt + 10 };
const denied: Partial<DeviceGrantRecord> = { status: 'denied', decidedAt: createdAt + 10 };
const consumed: Partial<DeviceGrantRecord> = { ...approved, status: 'consumed', consumedAt: createdAt + 20 };
/** The previous poll, a minute in. */
const last = createdMs + 60_000;

interface Case {
  name: string;
  grant: DeviceGrantRecord;
  nowMs: number;
  expected: PollDecision;
}

const table: Array<{ wire: string; cases: Case[] }> = [
  {
    wire: 'authorization_pending',
    cases: [
      { name: 'first poll, no previous poll, at the very instant of issue', grant: grant(), nowMs: createdMs, expected: { kind: 'pending' } },
      { name: 'first poll a few ms after issue', grant: grant(), nowMs: createdMs + 3, expected: { kind: 'pending' } },
      { name: 'poll exactly one interval after the previous', grant: grant({ lastPolledAtMs: last }), nowMs: last + 5000, expected: { kind: 'pending' } },
      { name: 'poll long after the previous', grant: grant({ lastPolledAtMs: last }), nowMs: last + 120_000, expected: { kind: 'pending' } },
      {
        name: 'poll 0.9 s early with interval 5 (jitter allowance 1 s)',
        grant: grant({ lastPolledAtMs: last }),
        nowMs: last + 4100,
        expected: { kind: 'pending' },
      },
      {
        name: 'poll exactly 1 s early with interval 5 (edge of the allowance)',
        grant: grant({ lastPolledAtMs: last }),
        nowMs: last + 4000,
        expected: { kind: 'pending' },
      },
      {
        name: 'interval 1, poll 0.8 s after the previous (edge of the 200 ms allowance)',
        grant: grant({ interval: 1, lastPolledAtMs: last }),
        nowMs: last + 800,
        expected: { kind: 'pending' },
      },
      {
        name: 'interval 10 after a slow_down, poll 9 s after the previous',
        grant: grant({ interval: 10, lastPolledAtMs: last }),
        nowMs: last + 9000,
        expected: { kind: 'pending' },
      },
      { name: 'last millisecond before expiry', grant: grant({ lastPolledAtMs: expiresMs - 10_000 }), nowMs: expiresMs - 1, expected: { kind: 'pending' } },
    ],
  },
  {
    wire: 'slow_down',
    cases: [
      {
        name: 'poll 1.5 s early with interval 5',
        grant: grant({ lastPolledAtMs: last }),
        nowMs: last + 3500,
        expected: { kind: 'slow_down', newInterval: 10 },
      },
      {
        name: 'poll 1 ms beyond the allowance with interval 5',
        grant: grant({ lastPolledAtMs: last }),
        nowMs: last + 3999,
        expected: { kind: 'slow_down', newInterval: 10 },
      },
      { name: 'second poll in the same millisecond', grant: grant({ lastPolledAtMs: last }), nowMs: last, expected: { kind: 'slow_down', newInterval: 10 } },
      {
        name: 'interval 1, poll 0.5 s after the previous (allowance only 200 ms)',
        grant: grant({ interval: 1, lastPolledAtMs: last }),
        nowMs: last + 500,
        expected: { kind: 'slow_down', newInterval: 6 },
      },
      {
        name: 'interval 1, poll 1 ms beyond the 200 ms allowance',
        grant: grant({ interval: 1, lastPolledAtMs: last }),
        nowMs: last + 799,
        expected: { kind: 'slow_down', newInterval: 6 },
      },
      {
        name: 'interval 10 after an earlier slow_down, poll after 5 s',
        grant: grant({ interval: 10, lastPolledAtMs: last }),
        nowMs: last + 5000,
        expected: { kind: 'slow_down', newInterval: 15 },
      },
      {
        name: 'too fast in the last millisecond before expiry',
        grant: grant({ lastPolledAtMs: expiresMs - 1000 }),
        nowMs: expiresMs - 1,
        expected: { kind: 'slow_down', newInterval: 10 },
      },
    ],
  },
  {
    wire: 'expired_token',
    cases: [
      { name: 'pending, polled exactly at expiresAt', grant: grant(), nowMs: expiresMs, expected: { kind: 'expired' } },
      {
        name: 'pending, polled well after expiry at a proper interval',
        grant: grant({ lastPolledAtMs: expiresMs - 1000 }),
        nowMs: expiresMs + 3_600_000,
        expected: { kind: 'expired' },
      },
      { name: 'pending and too fast, but expired', grant: grant({ lastPolledAtMs: expiresMs - 100 }), nowMs: expiresMs, expected: { kind: 'expired' } },
      { name: 'denied, but expired', grant: grant({ ...denied }), nowMs: expiresMs, expected: { kind: 'expired' } },
      { name: 'approved, but expired', grant: grant({ ...approved }), nowMs: expiresMs + 1, expected: { kind: 'expired' } },
      {
        name: 'approved and too fast, but expired',
        grant: grant({ ...approved, lastPolledAtMs: expiresMs - 10 }),
        nowMs: expiresMs,
        expected: { kind: 'expired' },
      },
    ],
  },
  {
    wire: 'access_denied',
    cases: [
      { name: 'denied, first poll', grant: grant({ ...denied }), nowMs: createdMs + 30_000, expected: { kind: 'denied' } },
      { name: 'denied, polled at a proper interval', grant: grant({ ...denied, lastPolledAtMs: last }), nowMs: last + 5000, expected: { kind: 'denied' } },
      { name: 'denied, polled far too fast', grant: grant({ ...denied, lastPolledAtMs: last }), nowMs: last + 1, expected: { kind: 'denied' } },
      { name: 'denied, last millisecond before expiry', grant: grant({ ...denied }), nowMs: expiresMs - 1, expected: { kind: 'denied' } },
    ],
  },
  {
    // Not an error: the approved grant is exchanged for an access token.
    wire: 'access_token',
    cases: [
      {
        name: 'approved, polled at a proper interval',
        grant: grant({ ...approved, lastPolledAtMs: last }),
        nowMs: last + 5000,
        expected: { kind: 'approved' },
      },
      { name: 'approved, polled far too fast', grant: grant({ ...approved, lastPolledAtMs: last }), nowMs: last + 1, expected: { kind: 'approved' } },
      {
        name: 'approved, interval 1 polled after 0.5 s',
        grant: grant({ ...approved, interval: 1, lastPolledAtMs: last }),
        nowMs: last + 500,
        expected: { kind: 'approved' },
      },
      { name: 'approved, first poll', grant: grant({ ...approved }), nowMs: createdMs + 20_000, expected: { kind: 'approved' } },
    ],
  },
  {
    wire: 'invalid_grant',
    cases: [
      { name: 'consumed (spent) code', grant: grant({ ...consumed, lastPolledAtMs: last }), nowMs: last + 5000, expected: { kind: 'spent' } },
      { name: 'consumed code polled too fast', grant: grant({ ...consumed, lastPolledAtMs: last }), nowMs: last + 1, expected: { kind: 'spent' } },
      { name: 'consumed code, even when also expired', grant: grant({ ...consumed }), nowMs: expiresMs, expected: { kind: 'spent' } },
      { name: 'consumed code long after expiry', grant: grant({ ...consumed }), nowMs: expiresMs + 86_400_000, expected: { kind: 'spent' } },
    ],
  },
];

for (const { wire, cases } of table) {
  describe(wire, () => {
    for (const c of cases) {
      it(c.name, () => {
        expect(decidePoll(c.grant, c.nowMs)).toEqual(c.expected);
      });
    }
  });
}

describe('pollJitterAllowanceMs', () => {
  const rows: Array<[number, number]> = [
    [1, 200],
    [2, 400],
    [3, 600],
    [4, 800],
    [5, 1000],
    [6, 1000],
    [600, 1000],
  ];
  for (const [interval, allowance] of rows) {
    it(`interval ${interval} s allows ${allowance} ms`, () => {
      expect(pollJitterAllowanceMs(interval)).toBe(allowance);
    });
  }

  it('slow_down adds 5 seconds (RFC 8628 §3.5)', () => {
    expect(slowDownIncrement).toBe(5);
  });
});

describe('decidePoll purity', () => {
  it('does not modify the grant it is given', () => {
    const g = grant({ lastPolledAtMs: last });
    const before = structuredClone(g);
    decidePoll(g, last + 1);
    expect(g).toEqual(before);
  });
});
