/**
 * The rate limiters of rate_limit.ts with their counters in the Store instead of process memory,
 * for a store several server instances share (PostgreSQL): every instance counts in the same row,
 * so a limit holds for the whole deployment. Same rules, same answers; each step is one atomic
 * store verb.
 */
import type { Clock } from '../clock.js';
import type { Store } from '../store/store.js';
import { BackoffLimiter, type FailureLimiter, type RateLimitRule, type RateLimitState, type WindowLimiter } from './rate_limit.js';

const open: RateLimitState = { limited: false, retryAfter: 0 };

export class SharedWindowLimiter implements WindowLimiter {
  constructor(
    private readonly store: Store,
    /** Which limiter the counters belong to (several share one table). */
    private readonly bucket: string,
    private readonly rule: RateLimitRule | undefined,
    private readonly clock: Clock,
  ) {}

  private state(count: number, startedAt: number, pending: 0 | 1): RateLimitState {
    if (!this.rule || count + pending <= this.rule.limit) return open;
    return { limited: true, retryAfter: Math.ceil(startedAt + this.rule.windowSeconds - this.clock()) };
  }

  async check(key: string): Promise<RateLimitState> {
    if (!this.rule) return open;
    const counter = await this.store.readRateLimitCounter(this.bucket, key);
    if (!counter || this.clock() - counter.startedAt >= this.rule.windowSeconds) return open;
    return this.state(counter.count, counter.startedAt, 1);
  }

  /** One atomic INSERT … ON CONFLICT … RETURNING: the count this event got decides, in every instance. */
  async hit(key: string): Promise<RateLimitState> {
    if (!this.rule) return open;
    const counter = await this.store.countRateLimitEvent(this.bucket, key, this.clock(), this.rule.windowSeconds);
    return this.state(counter.count, counter.startedAt, 0);
  }

  async undo(key: string): Promise<void> {
    if (!this.rule) return;
    await this.store.undoRateLimitEvent(this.bucket, key);
  }
}

export class SharedBackoffLimiter implements FailureLimiter {
  constructor(
    private readonly store: Store,
    private readonly bucket: string,
    private readonly rule: RateLimitRule | undefined,
    private readonly clock: Clock,
  ) {}

  /** As in BackoffLimiter: forgotten only after the longest wait and a window more. */
  private get forgetAfter(): number {
    return BackoffLimiter.maxDelaySeconds + (this.rule?.windowSeconds ?? 0);
  }

  /** The wait after `count` failures, the latest at `lastAt`. */
  private state(count: number, lastAt: number): RateLimitState {
    if (!this.rule || this.clock() - lastAt >= this.forgetAfter || count < this.rule.limit) return open;
    const delay = Math.min(BackoffLimiter.maxDelaySeconds, this.rule.windowSeconds * 2 ** (count - this.rule.limit));
    const retryAfter = Math.ceil(lastAt + delay - this.clock());
    return retryAfter > 0 ? { limited: true, retryAfter } : open;
  }

  async check(key: string): Promise<RateLimitState> {
    if (!this.rule) return open;
    const counter = await this.store.readRateLimitCounter(this.bucket, key);
    return counter ? this.state(counter.count, counter.lastAt) : open;
  }

  /**
   * One atomic count, then the decision from the failures before it: the counter's `startedAt`
   * holds the time of the failure before the latest (see countRateLimitFailure). A refused attempt
   * is taken back again, as the in-memory limiter never counts it.
   */
  async attempt(key: string): Promise<RateLimitState> {
    if (!this.rule) return open;
    const counter = await this.store.countRateLimitFailure(this.bucket, key, this.clock(), this.forgetAfter);
    const state = counter.count > 1 ? this.state(counter.count - 1, counter.startedAt) : open;
    // Refused: the count and the time of the latest failure go back to what they were.
    if (state.limited) await this.store.undoRateLimitEvent(this.bucket, key, counter.startedAt);
    return state;
  }

  async failure(key: string): Promise<void> {
    if (!this.rule) return;
    await this.store.countRateLimitFailure(this.bucket, key, this.clock(), this.forgetAfter);
  }

  async reset(key: string): Promise<void> {
    await this.store.clearRateLimitCounter(this.bucket, key);
  }

  async undo(key: string): Promise<void> {
    await this.store.undoRateLimitEvent(this.bucket, key);
  }
}
