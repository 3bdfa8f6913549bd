/**
 * The stored audit log: every audit event is also appended to the store, so that the
 * admin console can show and filter it. Writes are batched — collected for a moment and appended in
 * one transaction — so that an event never adds a database write to the request that caused it
 * (token issuance is the hot path). close() writes what is left; a crash loses at most the last
 * `flushAfterMs` of events, which the log lines still carry.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { AuditEventRecord, Store } from '../store/store.js';
import { isStoreUnavailable } from '../store/unavailable.js';

export type PendingAuditEvent = Omit<AuditEventRecord, 'id'>;

/** A stored event's details are bounded: an event is a line in a log, not a document. */
const maxDetailsBytes = 4096;
const flushAfterMs = 250;
/** A batch the database could not take (it was away) is tried again after this long. */
const retryAfterMs = 1_000;
const flushAtCount = 200;
/** Events waiting while the store is slow or down: past this many, new ones are dropped (and counted in the log). */
const maxWaiting = 20_000;

/** The event's own fields (not who, whom, from where), within the size bound. */
export function auditDetails(fields: Record<string, unknown>): Record<string, unknown> {
  const { actor: _actor, userId: _userId, clientId: _clientId, ...rest } = fields;
  const json = JSON.stringify(rest);
  if (Buffer.byteLength(json) <= maxDetailsBytes) return JSON.parse(json) as Record<string, unknown>;
  return { truncated: true };
}

function text(value: unknown, max = 256): string | undefined {
  return typeof value === 'string' && value !== '' ? value.slice(0, max) : undefined;
}

/** The stored form of an audit event with its fields as audit() is given them. */
export function auditRecord(at: number, event: string, ip: string | undefined, fields: Record<string, unknown>): PendingAuditEvent {
  return {
    at,
    event,
    actor: text(fields.actor),
    userId: text(fields.userId),
    clientId: text(fields.clientId),
    ip: text(ip, 64),
    details: auditDetails(fields),
  };
}

export class AuditTrail {
  private pending: PendingAuditEvent[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  /** Events recorded but not yet stored (pending and in batches being written). */
  private waiting = 0;
  private dropped = 0;
  /** While the database is away, a full batch waits for the retry instead of being tried at once. */
  private retryingUntil = 0;

  constructor(
    private readonly store: Store,
    private readonly log: FastifyBaseLogger | undefined,
  ) {}

  record(event: PendingAuditEvent): void {
    if (this.waiting >= maxWaiting) {
      // Memory stays bounded when the store cannot keep up; the log line of the event remains.
      if (this.dropped++ === 0) this.log?.warn({ waiting: this.waiting }, 'audit events are not being stored fast enough: dropping from the stored audit log');
      return;
    }
    this.waiting++;
    this.pending.push(event);
    if (this.pending.length >= flushAtCount && Date.now() >= this.retryingUntil) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), Math.max(flushAfterMs, this.retryingUntil - Date.now())).unref();
  }

  /** Appends what is pending; resolves when it (and every earlier batch) is stored. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    if (batch.length > 0) {
      this.writing = this.writing.then(() =>
        this.store.appendAuditEvents(batch).then(
          () => this.stored(batch.length),
          (err: unknown) => {
            if (isStoreUnavailable(err)) {
              // The database is away for a moment: the batch waits for it (within the memory bound
              // that record() keeps), ahead of what came since.
              this.pending = [...batch, ...this.pending];
              this.retryingUntil = Date.now() + retryAfterMs;
              this.timer ??= setTimeout(() => void this.flush(), retryAfterMs).unref();
              return;
            }
            // The log lines still hold these events; the server keeps serving.
            this.log?.error({ err, events: batch.length }, 'could not store audit events');
            this.stored(batch.length);
          },
        ),
      );
    }
    return this.writing;
  }

  private stored(count: number): void {
    this.waiting -= count;
    if (this.dropped > 0 && this.waiting === 0) {
      this.log?.warn({ dropped: this.dropped }, 'audit events were dropped from the stored audit log');
      this.dropped = 0;
    }
  }
}
