import { describe, expect, it } from 'vitest';
import { AuditTrail, auditRecord } from '../../src/audit/audit_trail.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite_store.js';
import { StoreUnavailableError } from '../../src/store/unavailable.js';

describe('auditRecord', () => {
  it('takes who and whom out of the fields and keeps the rest as details', () => {
    expect(auditRecord(1000, 'user.role_granted', '203.0.113.5', { actor: 'root', userId: 'u1', clientId: undefined, role: 'analyst' })).toEqual({
      at: 1000,
      event: 'user.role_granted',
      actor: 'root',
      userId: 'u1',
      clientId: undefined,
      ip: '203.0.113.5',
      details: { role: 'analyst' },
    });
  });

  it('bounds the details and the text fields', () => {
    const record = auditRecord(1, 'x', 'y'.repeat(100), { userId: 'u'.repeat(1000), blob: 'z'.repeat(10_000) });
    expect(record.details).toEqual({ truncated: true });
    expect(record.userId).toHaveLength(256);
    expect(record.ip).toHaveLength(64);
  });
});

describe('AuditTrail', () => {
  it('stores events in batches, and flush() writes what is pending', async () => {
    const store = new SqliteStore({ path: ':memory:', now: 1_800_000_000 });
    try {
      let batches = 0;
      const counting = new Proxy(store, {
        get(target, prop, receiver) {
          if (prop === 'appendAuditEvents') return (events: Parameters<SqliteStore['appendAuditEvents']>[0]) => (batches++, target.appendAuditEvents(events));
          return Reflect.get(target, prop, receiver);
        },
      });
      const trail = new AuditTrail(counting, undefined);
      for (let i = 0; i < 450; i++) trail.record(auditRecord(i, 'signin.success', '203.0.113.1', { userId: `u${i}` }));
      await trail.flush();
      expect(batches).toBe(3); // 200 + 200 at the threshold, then the last 50 on flush
      expect(await store.listAuditEvents({ limit: 500 })).toHaveLength(450);
      await trail.flush();
      expect(batches).toBe(3);
    } finally {
      await store.close();
    }
  });

  it('a failing store is logged and the trail goes on', async () => {
    const errors: unknown[] = [];
    const broken = { appendAuditEvents: async () => Promise.reject(new Error('disk full')) } as unknown as SqliteStore;
    const trail = new AuditTrail(broken, { error: (obj: unknown) => void errors.push(obj) } as never);
    trail.record(auditRecord(1, 'signin.success', undefined, {}));
    await trail.flush();
    expect(errors).toHaveLength(1);
  });

  it('a batch the database could not take while it was away is kept and stored once it is back', async () => {
    const store = new SqliteStore({ path: ':memory:', now: 1_800_000_000 });
    try {
      let away = true;
      let attempts = 0;
      const flaky = new Proxy(store, {
        get(target, prop, receiver) {
          if (prop === 'appendAuditEvents') {
            return (events: Parameters<SqliteStore['appendAuditEvents']>[0]) => {
              attempts++;
              return away ? Promise.reject(new StoreUnavailableError('the database is unreachable', 'connection')) : target.appendAuditEvents(events);
            };
          }
          return Reflect.get(target, prop, receiver);
        },
      });
      const errors: unknown[] = [];
      const trail = new AuditTrail(flaky, { error: (obj: unknown) => void errors.push(obj), warn: () => undefined } as never);
      for (let i = 0; i < 3; i++) trail.record(auditRecord(i, 'signin.success', undefined, { userId: `u${i}` }));
      await trail.flush();
      expect(attempts).toBe(1);
      // More events while it is away: one attempt per retry, not one per event.
      for (let i = 3; i < 250; i++) trail.record(auditRecord(i, 'signin.success', undefined, { userId: `u${i}` }));
      expect(attempts).toBe(1);
      away = false;
      await trail.flush();
      expect(await store.listAuditEvents({ limit: 500 })).toHaveLength(250);
      expect(errors).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
