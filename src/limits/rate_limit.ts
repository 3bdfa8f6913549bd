/**
 * A fixed-window counter per key (for example "user-code:203.0.113.9"). Used to slow down
 * guessing: wrong user codes at /activate and unknown device codes at the token endpoint
 * (RFC 8628 §5.1, §5.2). Memory is bounded: when the table is full, finished windows are dropped,
 * and if none are, the oldest entries go first.
 */
import type { Clock } from '../clock.js';

export interface RateLimitRule {
  /** How many counted events a key may have in one window. */
  limit: number;
  windowSeconds: number;
}

export interface RateLimitState {
  limited: boolean;
  /** Seconds until the window ends (meaningful when limited). */
  retryAfter: number;
}

/** A fixed-window limiter, counted in memory (RateLimiter) or in a shared store (SharedWindowLimiter). */
export interface WindowLimiter {
  /** Whether one more event would exceed the limit, without counting anything. */
  check(key: string): RateLimitState | Promise<RateLimitState>;
  /**
   * Counts one event for the key; limited when this event went past the limit. Counting and
   * deciding are one atomic step, so parallel requests cannot all slip under the limit: count up
   * front, then take the event back with undo() if it turns out not to count (a right code).
   */
  hit(key: string): RateLimitState | Promise<RateLimitState>;
  /** Takes back one event counted by hit(). */
  undo(key: string): void | Promise<void>;
}

/** A growing back-off after failures (BackoffLimiter in memory, SharedBackoffLimiter in a shared store). */
export interface FailureLimiter {
  check(key: string): RateLimitState | Promise<RateLimitState>;
  /**
   * Counts an attempt up front as a failure, in one step with the check, so that parallel
   * attempts cannot all pass before any is counted. A refused attempt is not counted.
   */
  attempt(key: string): RateLimitState | Promise<RateLimitState>;
  failure(key: string): void | Promise<void>;
  reset(key: string): void | Promise<void>;
  /** Takes back one counted failure (an attempt counted up front that then succeeded). */
  undo(key: string): void | Promise<void>;
}

interface Window {
  startedAt: number;
  count: number;
}

export class RateLimiter implements WindowLimiter {
  private readonly windows = new Map<string, Window>();

  constructor(
    /** Undefined: the limit is off, nothing is ever limited. */
    private readonly rule: RateLimitRule | undefined,
    private readonly clock: Clock,
    private readonly maxKeys = 100_000,
  ) {}

  private current(key: string): Window | undefined {
    const window = this.windows.get(key);
    if (window && this.rule && this.clock() - window.startedAt >= this.rule.windowSeconds) {
      this.windows.delete(key);
      return undefined;
    }
    return window;
  }

  /** `pending` is 1 when asking whether one more event would be allowed, 0 after counting it. */
  private state(window: Window | undefined, pending: 0 | 1): RateLimitState {
    if (!this.rule || !window || window.count + pending <= this.rule.limit) return { limited: false, retryAfter: 0 };
    return { limited: true, retryAfter: Math.ceil(window.startedAt + this.rule.windowSeconds - this.clock()) };
  }

  /** Whether one more event would exceed the limit, without counting anything. */
  check(key: string): RateLimitState {
    return this.state(this.current(key), 1);
  }

  /** Counts one event for the key; limited when this event went past the limit. */
  hit(key: string): RateLimitState {
    if (!this.rule) return { limited: false, retryAfter: 0 };
    let window = this.current(key);
    if (!window) {
      this.makeRoom();
      window = { startedAt: this.clock(), count: 0 };
      this.windows.set(key, window);
    }
    window.count++;
    return this.state(window, 0);
  }

  undo(key: string): void {
    const window = this.windows.get(key);
    if (!window) return;
    window.count--;
    if (window.count <= 0) this.windows.delete(key);
  }

  private makeRoom(): void {
    if (this.windows.size < this.maxKeys || !this.rule) return;
    const now = this.clock();
    for (const [key, window] of this.windows) {
      if (now - window.startedAt >= this.rule.windowSeconds) this.windows.delete(key);
    }
    // Map iteration follows insertion order, so the first keys are the oldest windows.
    for (const key of this.windows.keys()) {
      if (this.windows.size < this.maxKeys) break;
      this.windows.delete(key);
    }
  }
}

/**
 * The key a source address is counted under: an IPv4 address as is, an IPv6 address by its /64,
 * because one host or home network usually holds a whole /64 and could otherwise rotate through it.
 */
export function rateLimitKey(ip: string): string {
  const address = ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip;
  if (!address.includes(':')) return address;
  const [head = '', tail = ''] = address.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = address.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((g) => (g === '' ? '0' : g.toLowerCase().replace(/^0+(?=.)/, '')))
    .join(':')}::/64`;
}

interface Failures {
  count: number;
  lastAt: number;
}

/**
 * Growing back-off for failed sign-ins: after `limit` failures for a key, each attempt must wait
 * `windowSeconds`, doubled with every further failure, up to an hour. A success resets the key;
 * an hour without failures forgets it. Unlike a hard lock-out this never locks the rightful owner
 * out for long, while guessing slows to a handful of tries an hour.
 */
export class BackoffLimiter implements FailureLimiter {
  private readonly failures = new Map<string, Failures>();
  static readonly maxDelaySeconds = 3600;

  constructor(
    private readonly rule: RateLimitRule | undefined,
    private readonly clock: Clock,
    private readonly maxKeys = 100_000,
  ) {}

  private entry(key: string): Failures | undefined {
    const entry = this.failures.get(key);
    // Forgotten only after the longest wait has passed and a window more: at the cap, guessing stays
    // at one try an hour instead of earning a fresh set of free tries each cycle.
    if (entry && this.clock() - entry.lastAt >= BackoffLimiter.maxDelaySeconds + (this.rule?.windowSeconds ?? 0)) {
      this.failures.delete(key);
      return undefined;
    }
    return entry;
  }

  check(key: string): RateLimitState {
    const entry = this.entry(key);
    if (!this.rule || !entry || entry.count < this.rule.limit) return { limited: false, retryAfter: 0 };
    const delay = Math.min(BackoffLimiter.maxDelaySeconds, this.rule.windowSeconds * 2 ** (entry.count - this.rule.limit));
    const retryAfter = Math.ceil(entry.lastAt + delay - this.clock());
    return retryAfter > 0 ? { limited: true, retryAfter } : { limited: false, retryAfter: 0 };
  }

  attempt(key: string): RateLimitState {
    const state = this.check(key);
    if (!state.limited) this.failure(key);
    return state;
  }

  failure(key: string): void {
    if (!this.rule) return;
    const entry = this.entry(key);
    if (entry) {
      entry.count++;
      entry.lastAt = this.clock();
      return;
    }
    if (this.failures.size >= this.maxKeys) {
      const oldest = this.failures.keys().next().value;
      if (oldest !== undefined) this.failures.delete(oldest);
    }
    this.failures.set(key, { count: 1, lastAt: this.clock() });
  }

  reset(key: string): void {
    this.failures.delete(key);
  }

  /** Takes back one counted failure (an attempt counted up front that then succeeded). */
  undo(key: string): void {
    const entry = this.failures.get(key);
    if (!entry) return;
    entry.count--;
    if (entry.count <= 0) this.failures.delete(key);
  }
}
