import { describe, expect, it } from 'vitest';
import { manualClock } from '../../src/clock.js';
import { purgeAll } from '../../src/housekeeping.js';
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
