import { describe, expect, it } from 'vitest';
import { manualClock } from '../../src/clock.js';
import { purgeAll, purgeAuditLog } from '../../src/housekeeping.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite_store.js';
import { session, user } from '../helpers/records.js';

describe('purgeAll', () => {
  it('removes a large backlog in batches and leaves live rows', async () => {
    const clock = manualClock(1_800_000_000);
    const store = new SqliteStore({ path: ':memory:', now: 1_800_000_000 });
    try {
      await store.createUser(user());
      for (let i = 0; i < 1234; i++) await store.createSession(session({ idHash: `old-${i}`, expiresAt: 1_800_000_000 - 1 }));
      await store.createSession(session({ idHash: 'live', expiresAt: 1_800_000_000 + 60 }));
      let calls = 0;
      const counting = new Proxy(store, {
        get(target, prop, receiver) {
          if (prop === 'purgeExpired') return (now: number, batch?: number) => (calls++, target.purgeExpired(now, batch));
          return Reflect.get(target, prop, receiver);
        },
      });
      const counts = await purgeAll(counting, clock, 500);
      expect(counts.sessions).toBe(1234);
      expect(calls).toBe(3); // 500 + 500 + 234
      expect(await store.findSession('live', 1_800_000_000)).toBeDefined();
      expect(store.db.prepare('SELECT count(*) AS n FROM sessions').get()).toEqual({ n: 1 });
    } finally {
      await store.close();
    }
  });
});

describe('purgeAuditLog', () => {
  it('keeps LATCHKEY_AUDIT_RETENTION of events and removes the older ones in batches', async () => {
    const clock = manualClock(1_800_000_000);
    const store = new SqliteStore({ path: ':memory:', now: 1_800_000_000 });
    try {
      const day = 86_400_000;
      const at = (ms: number) => ({ at: ms, event: 'signin.success', actor: undefined, userId: 'u', clientId: undefined, ip: '203.0.113.1', details: {} });
      await store.appendAuditEvents(Array.from({ length: 1100 }, (_, i) => at(1_800_000_000_000 - 40 * day - i)));
      await store.appendAuditEvents([at(1_800_000_000_000 - 29 * day), at(1_800_000_000_000)]);
      expect(await purgeAuditLog(store, clock, 30 * 86_400, 500)).toBe(1100);
      expect((await store.listAuditEvents({ limit: 500 })).map((e) => e.at)).toEqual([1_800_000_000_000, 1_800_000_000_000 - 29 * day]);
    } finally {
      await store.close();
    }
  });
});
