/**
 * Recording the polls of device codes (RFC 8628 §3.5), which slow_down is decided from. Two ways,
 * with one contract (the store's pollDeviceGrant): each returns the grant as it was before this
 * poll, with the previous poll's time, so that decidePoll answers it.
 *
 * - In the store (storeDevicePolls): every poll writes its time. Needed where several processes
 *   serve one database (LATCHKEY_WORKERS > 1, or PostgreSQL instances), since a device's polls can
 *   reach any of them.
 * - In memory (ledgerDevicePolls), when this process alone serves the database (SQLite, one
 *   worker): a pending poll then only reads. Poll times are throttling state like the rate
 *   limiters' counts, which live in memory there too; writing one per poll was most of a pending
 *   poll's cost. A slow_down still goes to the store (interval and time), so a grown interval
 *   lasts; a restart forgets only the polls since, so the first poll after it is held only to the
 *   last stored slow_down.
 */
import type { Config } from '../config.js';
import type { DeviceGrantRecord, Store } from '../store/store.js';
import { decidePoll, slowDownIncrement } from './device_poll.js';
import { DevicePollLedger } from '../limits/device_poll_ledger.js';

export interface DevicePolls {
  /**
   * Records a poll of the device code with digest `deviceCodeHash` by `clientId` at `nowMs`. Returns
   * the grant as it was before this poll; a code of another client is returned untouched (and
   * nothing is recorded); an unknown code is undefined.
   */
  poll(deviceCodeHash: string, clientId: string, nowMs: number): Promise<DeviceGrantRecord | undefined>;
}

/** The interval after this poll: grown by a slow_down, as decidePoll decides it. */
function nextInterval(before: DeviceGrantRecord, nowMs: number): number {
  const decision = decidePoll(before, nowMs);
  return decision.kind === 'slow_down' ? decision.newInterval : before.interval;
}

export function storeDevicePolls(store: Store): DevicePolls {
  return {
    poll: (deviceCodeHash, clientId, nowMs) => store.pollDeviceGrant(deviceCodeHash, clientId, nowMs, (before) => nextInterval(before, nowMs)),
  };
}

export function ledgerDevicePolls(store: Store, ledger = new DevicePollLedger()): DevicePolls {
  return {
    async poll(deviceCodeHash, clientId, nowMs) {
      const stored = await store.findDeviceGrantByDeviceCode(deviceCodeHash);
      if (!stored || stored.clientId !== clientId) return stored;
      // From here to ledger.record nothing awaits: two polls of one code in the same moment are
      // decided one after the other, the second seeing the first.
      const remembered = ledger.lastPoll(stored.id);
      const before = remembered !== undefined && remembered > (stored.lastPolledAtMs ?? -Infinity) ? { ...stored, lastPolledAtMs: remembered } : stored;
      const decision = decidePoll(before, nowMs);
      ledger.record(stored.id, nowMs);
      if (decision.kind !== 'slow_down') return before;
      // Rare (a device polling too fast): the grown interval is stored for good, each slow_down
      // adding to the interval as stored, as the store's own recording does.
      await store.pollDeviceGrant(deviceCodeHash, clientId, nowMs, (current) => Math.max(current.interval, before.interval) + slowDownIncrement);
      return before;
    },
  };
}

/** In memory when this process alone serves the database; otherwise in the store. */
export function devicePollsFor(config: Config, store: Store): DevicePolls {
  return config.workers <= 1 && !store.sharedAcrossInstances ? ledgerDevicePolls(store) : storeDevicePolls(store);
}
