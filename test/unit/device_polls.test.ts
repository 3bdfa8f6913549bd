/**
 * Where the polls of device codes are recorded (oauth/device_polls.ts, limits/device_poll_ledger.ts):
 * in this process's memory when it alone serves the database, in the store otherwise. Both answer
 * like the store's pollDeviceGrant: the grant as it was before the poll, with the previous poll.
 */
import { describe, expect, it } from 'vitest';
import { configFrom } from '../../src/config.js';
import { DevicePollLedger } from '../../src/limits/device_poll_ledger.js';
import { devicePollsFor, ledgerDevicePolls, storeDevicePolls } from '../../src/oauth/device_polls.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite_store.js';
import type { Store } from '../../src/store/store.js';
import { client, deviceGrant, t0, user } from '../helpers/records.js';

/** Runs `work` on a store holding one pending device grant (device-grant-1 of client cli), then closes it. */
async function withGrantStore(work: (store: SqliteStore) => Promise<void>): Promise<void> {
  const store = new SqliteStore({ path: ':memory:', now: t0 });
  try {
    await store.createUser(user());
    await store.createClient(client());
    await store.createDeviceGrant(deviceGrant());
    await work(store);
  } finally {
    await store.close();
  }
}

const ms = (seconds: number) => (t0 + seconds) * 1000;

describe('DevicePollLedger', () => {
  it('remembers the latest poll of each grant', () => {
    const ledger = new DevicePollLedger();
    expect(ledger.lastPoll('a')).toBeUndefined();
    ledger.record('a', ms(1));
    ledger.record('b', ms(2));
    ledger.record('a', ms(7));
    expect(ledger.lastPoll('a')).toBe(ms(7));
    expect(ledger.lastPoll('b')).toBe(ms(2));
  });

  it('keeps a poll for at least one window and forgets it after two, a generation at a time', () => {
    const ledger = new DevicePollLedger(60_000);
    ledger.record('old', ms(0));
    ledger.record('newer', ms(59));
    ledger.record('other', ms(61)); // a new generation: old and newer move to the previous one
    expect(ledger.lastPoll('old')).toBe(ms(0));
    expect(ledger.lastPoll('newer')).toBe(ms(59));
    ledger.record('other', ms(122)); // and again: the first generation is dropped whole
    expect(ledger.lastPoll('old')).toBeUndefined();
    expect(ledger.lastPoll('newer')).toBeUndefined();
    expect(ledger.lastPoll('other')).toBe(ms(122));
  });

  it('stays within its bound however many grants poll, forgetting the oldest first', () => {
    const ledger = new DevicePollLedger(60_000, 1000);
    for (let i = 0; i < 10_000; i++) ledger.record(`grant-${i}`, ms(0));
    expect(ledger.size).toBeLessThanOrEqual(1000);
    expect(ledger.lastPoll('grant-9999')).toBe(ms(0));
    expect(ledger.lastPoll('grant-0')).toBeUndefined();
  });
});

describe('ledgerDevicePolls (one process)', () => {
  it('answers as the store does, without writing a pending poll', async () => {
    await withGrantStore(async (store) => {
      const polls = ledgerDevicePolls(store);
      const first = await polls.poll('device-grant-1', 'cli', ms(10));
      expect(first).toEqual(deviceGrant());
      const second = await polls.poll('device-grant-1', 'cli', ms(15));
      expect(second).toEqual({ ...deviceGrant(), lastPolledAtMs: ms(10) });
      expect((await store.findDeviceGrantByDeviceCode('device-grant-1'))?.lastPolledAtMs).toBeUndefined();
    });
  });

  it('a poll too soon is answered from memory and its slow_down stored: interval and time', async () => {
    await withGrantStore(async (store) => {
      const polls = ledgerDevicePolls(store);
      await polls.poll('device-grant-1', 'cli', ms(10));
      expect(await polls.poll('device-grant-1', 'cli', ms(12))).toMatchObject({ interval: 5, lastPolledAtMs: ms(10) });
      expect(await store.findDeviceGrantByDeviceCode('device-grant-1')).toMatchObject({ interval: 10, lastPolledAtMs: ms(12) });
      // Each slow_down adds 5 s to the interval as stored.
      expect(await polls.poll('device-grant-1', 'cli', ms(14))).toMatchObject({ interval: 10, lastPolledAtMs: ms(12) });
      expect((await store.findDeviceGrantByDeviceCode('device-grant-1'))?.interval).toBe(15);
    });
  });

  it('two polls of one code in the same moment: the second sees the first', async () => {
    await withGrantStore(async (store) => {
      const polls = ledgerDevicePolls(store);
      const [a, b] = await Promise.all([polls.poll('device-grant-1', 'cli', ms(10)), polls.poll('device-grant-1', 'cli', ms(10))]);
      expect([a?.lastPolledAtMs, b?.lastPolledAtMs]).toEqual([undefined, ms(10)]);
      expect((await store.findDeviceGrantByDeviceCode('device-grant-1'))?.interval).toBe(10);
    });
  });

  it('a code of another client is returned untouched and remembered for nobody; an unknown code is undefined', async () => {
    await withGrantStore(async (store) => {
      const polls = ledgerDevicePolls(store);
      expect(await polls.poll('device-grant-1', 'someone-else', ms(10))).toEqual(deviceGrant());
      expect(await polls.poll('device-grant-1', 'cli', ms(11))).toEqual(deviceGrant());
      expect(await polls.poll('nope', 'cli', ms(12))).toBeUndefined();
    });
  });
});

describe('storeDevicePolls (several processes)', () => {
  it('stores every poll', async () => {
    await withGrantStore(async (store) => {
      const polls = storeDevicePolls(store);
      await polls.poll('device-grant-1', 'cli', ms(10));
      expect((await store.findDeviceGrantByDeviceCode('device-grant-1'))?.lastPolledAtMs).toBe(ms(10));
    });
  });
});

describe('devicePollsFor', () => {
  const store = (sharedAcrossInstances: boolean) => ({ sharedAcrossInstances }) as Store;
  it('memory for one process on SQLite; the store for LATCHKEY_WORKERS > 1 or a store shared by instances', () => {
    // Told apart by behaviour above; here only which one is chosen, through the store they touch.
    const chosen = (workers: string, shared: boolean) => {
      const calls: string[] = [];
      const spy = new Proxy(store(shared), {
        get: (_target, key) => (key === 'sharedAcrossInstances' ? shared : () => (calls.push(String(key)), Promise.resolve(undefined))),
      });
      void devicePollsFor(configFrom({ LATCHKEY_WORKERS: workers }), spy).poll('h', 'c', 0);
      return calls;
    };
    expect(chosen('1', false)).toEqual(['findDeviceGrantByDeviceCode']);
    expect(chosen('2', false)).toEqual(['pollDeviceGrant']);
    expect(chosen('1', true)).toEqual(['pollDeviceGrant']);
  });
});
