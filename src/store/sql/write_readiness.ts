/**
 * Whether the database takes writes, for the readiness check (GET /readyz). A full disk, an I/O
 * error or a file turned read-only leave reads answering while every write gets 503, so a read
 * alone says "ready" to a load balancer that should have taken the instance out. What a request
 * would get is known here without asking the database: every failed statement or transaction of
 * the store is reported, and one that failed for want of storage marks the store. While it is
 * unmarked the answer costs nothing (no I/O: /readyz stays as cheap as its read). While it is
 * marked, a small committed write probe (readiness_probe, migration 0024) decides, at most once a
 * second whatever the number of probes, so that an instance taken out of rotation — which gets no
 * request to clear the mark — comes back by itself once space is freed.
 */
import { systemClock, type Clock } from '../../clock.js';
import { isStorageFault } from '../unavailable.js';

export class WriteReadiness {
  /** The storage fault the last failed write met; undefined while writes are taken. */
  private fault: unknown;
  private probing: Promise<boolean> | undefined;
  private lastProbe = Number.NEGATIVE_INFINITY;

  constructor(
    /** Commits a write that needs new pages and WAL space, as a request's does; throws as a request's write would. */
    private readonly probe: () => Promise<void>,
    private readonly clock: Clock = systemClock,
    private readonly probeEverySeconds = 1,
  ) {}

  /** Told of every statement or transaction of the store that failed. */
  failed(err: unknown): void {
    if (isStorageFault(err)) this.fault = err;
  }

  /** Whether a write would be taken now: no storage fault seen since the last probe that committed. */
  accepted(): Promise<boolean> {
    if (this.fault === undefined) return Promise.resolve(true);
    if (this.probing) return this.probing;
    const now = this.clock();
    if (now - this.lastProbe < this.probeEverySeconds) return Promise.resolve(false);
    this.lastProbe = now;
    this.probing = this.probe()
      .then(
        () => {
          this.fault = undefined;
          return true;
        },
        (err: unknown) => {
          if (!isStorageFault(err)) throw err;
          this.fault = err;
          return false;
        },
      )
      .finally(() => (this.probing = undefined));
    return this.probing;
  }
}
