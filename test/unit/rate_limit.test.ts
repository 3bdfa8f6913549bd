import { describe, it, expect } from 'vitest';
import { manualClock } from '../../src/clock.js';
import { BackoffLimiter, RateLimiter, rateLimitKey } from '../../src/limits/rate_limit.js';
import { laneFull, SlowLane } from '../../src/limits/signin_throttle.js';

const open = { limited: false, retryAfter: 0 };

/** The private table, read only to show that memory stays bounded. */
function tableSize(limiter: RateLimiter): number {
  return (limiter as unknown as { windows: Map<string, unknown> }).windows.size;
}
function tableKeys(limiter: RateLimiter): string[] {
  return [...(limiter as unknown as { windows: Map<string, unknown> }).windows.keys()];
}

describe('RateLimiter', () => {
  it('allows `limit` hits, then limits with retryAfter = seconds to the window end', () => {
    const clock = manualClock();
    const limiter = new RateLimiter({ limit: 3, windowSeconds: 60 }, clock);
    expect(limiter.hit('ip:a')).toEqual(open);
    expect(limiter.hit('ip:a')).toEqual(open);
    expect(limiter.hit('ip:a')).toEqual(open);
    expect(limiter.hit('ip:a')).toEqual({ limited: true, retryAfter: 60 });
    clock.advance(15);
    expect(limiter.hit('ip:a')).toEqual({ limited: true, retryAfter: 45 });
  });

  it('check() tells whether one more event would be refused', () => {
    const clock = manualClock();
    const limiter = new RateLimiter({ limit: 3, windowSeconds: 60 }, clock);
    expect(limiter.check('k')).toEqual(open);
    limiter.hit('k');
    limiter.hit('k');
    expect(limiter.check('k')).toEqual(open);
    limiter.hit('k');
    expect(limiter.check('k')).toEqual({ limited: true, retryAfter: 60 });
  });

  it('check() does not count', () => {
    const clock = manualClock();
    const limiter = new RateLimiter({ limit: 2, windowSeconds: 60 }, clock);
    for (let i = 0; i < 10; i++) expect(limiter.check('k')).toEqual(open);
    expect(limiter.hit('k')).toEqual(open);
    for (let i = 0; i < 10; i++) expect(limiter.check('k')).toEqual(open);
    expect(limiter.hit('k')).toEqual(open);
    for (let i = 0; i < 10; i++) expect(limiter.check('k')).toEqual({ limited: true, retryAfter: 60 });
    expect(limiter.hit('k')).toEqual({ limited: true, retryAfter: 60 });
  });

  it('check() creates no entry for an unknown key', () => {
    const clock = manualClock();
    const limiter = new RateLimiter({ limit: 2, windowSeconds: 60 }, clock);
    for (let i = 0; i < 50; i++) limiter.check(`k${i}`);
    expect(tableSize(limiter)).toBe(0);
  });

  it('rounds retryAfter up to whole seconds', () => {
    const clock = manualClock();
    const limiter = new RateLimiter({ limit: 1, windowSeconds: 60 }, clock);
    limiter.hit('k');
    clock.advance(10.5);
    expect(limiter.hit('k')).toEqual({ limited: true, retryAfter: 50 });
    clock.advance(49.4);
    expect(limiter.check('k')).toEqual({ limited: true, retryAfter: 1 });
  });

  it('starts a fresh window once windowSeconds have passed since the first hit', () => {
    const clock = manualClock();
    const limiter = new RateLimiter({ limit: 2, windowSeconds: 60 }, clock);
    limiter.hit('k');
    limiter.hit('k');
    expect(limiter.hit('k')).toEqual({ limited: true, retryAfter: 60 });
    clock.advance(59.9);
    expect(limiter.check('k')).toEqual({ limited: true, retryAfter: 1 });
    clock.advance(0.1);
    expect(limiter.check('k')).toEqual(open);
    expect(limiter.hit('k')).toEqual(open);
    expect(limiter.hit('k')).toEqual(open);
    expect(limiter.hit('k')).toEqual({ limited: true, retryAfter: 60 });
  });

  it('the window starts at the first hit, not at later ones (fixed window)', () => {
    const clock = manualClock();
    const limiter = new RateLimiter({ limit: 2, windowSeconds: 60 }, clock);
    limiter.hit('k');
    clock.advance(40);
    expect(limiter.hit('k')).toEqual(open);
    expect(limiter.hit('k')).toEqual({ limited: true, retryAfter: 20 });
    clock.advance(20);
    expect(limiter.hit('k')).toEqual(open);
  });

  it('keeps keys independent', () => {
    const clock = manualClock();
    const limiter = new RateLimiter({ limit: 1, windowSeconds: 60 }, clock);
    expect(limiter.hit('user-code:203.0.113.9')).toEqual(open);
    expect(limiter.hit('user-code:203.0.113.9')).toEqual({ limited: true, retryAfter: 60 });
    expect(limiter.check('user-code:203.0.113.10')).toEqual(open);
    expect(limiter.check('device-code:203.0.113.9')).toEqual(open);
    clock.advance(30);
    expect(limiter.hit('user-code:203.0.113.10')).toEqual(open);
    expect(limiter.check('user-code:203.0.113.10')).toEqual({ limited: true, retryAfter: 60 });
    expect(limiter.check('user-code:203.0.113.9')).toEqual({ limited: true, retryAfter: 30 });
  });

  it('with maxKeys 3, keeps only the three newest keys and stays correct for the newest', () => {
    const clock = manualClock();
    const limiter = new RateLimiter({ limit: 2, windowSeconds: 60 }, clock, 3);
    for (let i = 0; i < 10; i++) {
      limiter.hit(`k${i}`);
      limiter.hit(`k${i}`);
      clock.advance(1);
      expect(tableSize(limiter)).toBeLessThanOrEqual(3);
    }
    expect(tableKeys(limiter)).toEqual(['k7', 'k8', 'k9']);
    // k7, k8 and k9 are remembered (and at their limit); the seven older ones were evicted.
    const limited = Array.from({ length: 10 }, (_, i) => limiter.check(`k${i}`).limited);
    expect(limited).toEqual([false, false, false, false, false, false, false, true, true, true]);
    expect(limiter.check('k9')).toEqual({ limited: true, retryAfter: 59 });
    expect(limiter.check('k7')).toEqual({ limited: true, retryAfter: 57 });

    // The newest key still counts correctly, and the oldest remaining one makes room for it.
    expect(limiter.hit('k10')).toEqual(open);
    expect(limiter.hit('k10')).toEqual(open);
    expect(limiter.hit('k10')).toEqual({ limited: true, retryAfter: 60 });
    expect(tableKeys(limiter)).toEqual(['k8', 'k9', 'k10']);
    expect(limiter.check('k7')).toEqual(open);
    expect(limiter.check('k9')).toEqual({ limited: true, retryAfter: 59 });
  });

  it('when the table is full, finished windows are dropped and live ones kept', () => {
    const clock = manualClock();
    const limiter = new RateLimiter({ limit: 1, windowSeconds: 60 }, clock, 3);
    limiter.hit('old1');
    limiter.hit('old2');
    clock.advance(30);
    limiter.hit('live');
    clock.advance(30); // old1 and old2 have finished their windows; 'live' has 30 s left
    limiter.hit('new');
    expect(tableKeys(limiter)).toEqual(['live', 'new']);
    expect(limiter.hit('live')).toEqual({ limited: true, retryAfter: 30 });
    expect(limiter.check('new')).toEqual({ limited: true, retryAfter: 60 });
  });
});

describe('rateLimitKey', () => {
  const cases: Array<[string, string]> = [
    ['203.0.113.9', '203.0.113.9'],
    ['::ffff:203.0.113.9', '203.0.113.9'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::9', '2001:db8:1:2::/64'],
    ['2001:DB8:0001:0002:ffff::1', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1:2:3:4', 'fe80:0:0:0::/64'],
  ];
  for (const [ip, key] of cases) {
    it(`${ip} → ${key}`, () => {
      expect(rateLimitKey(ip)).toBe(key);
    });
  }

  it('puts every address of one /64 under one key', () => {
    expect(rateLimitKey('2001:db8:aa:bb::1')).toBe(rateLimitKey('2001:db8:aa:bb:ffff:ffff:ffff:ffff'));
    expect(rateLimitKey('2001:db8:aa:bb::1')).not.toBe(rateLimitKey('2001:db8:aa:bc::1'));
  });
});

describe('BackoffLimiter (failed sign-ins)', () => {
  it('allows `limit` failures, then a wait that doubles with each further failure, capped at an hour', () => {
    const clock = manualClock(1_800_000_000);
    const limiter = new BackoffLimiter({ limit: 3, windowSeconds: 30 }, clock);
    for (let i = 0; i < 3; i++) {
      expect(limiter.check('alice').limited).toBe(false);
      limiter.failure('alice');
    }
    expect(limiter.check('alice')).toEqual({ limited: true, retryAfter: 30 });
    clock.advance(30);
    expect(limiter.check('alice').limited).toBe(false);
    limiter.failure('alice');
    expect(limiter.check('alice')).toEqual({ limited: true, retryAfter: 60 });
    clock.advance(60);
    limiter.failure('alice');
    expect(limiter.check('alice')).toEqual({ limited: true, retryAfter: 120 });
    for (let i = 0; i < 20; i++) limiter.failure('alice');
    expect(limiter.check('alice').retryAfter).toBe(3600);
  });

  it('a success resets the key; other keys are independent; off never limits', () => {
    const clock = manualClock();
    const limiter = new BackoffLimiter({ limit: 1, windowSeconds: 30 }, clock);
    limiter.failure('a');
    expect(limiter.check('a').limited).toBe(true);
    expect(limiter.check('b').limited).toBe(false);
    limiter.reset('a');
    expect(limiter.check('a').limited).toBe(false);
    const off = new BackoffLimiter(undefined, clock);
    for (let i = 0; i < 100; i++) off.failure('a');
    expect(off.check('a').limited).toBe(false);
  });

  it('forgets a key only an hour and a window after its last failure', () => {
    const clock = manualClock();
    const limiter = new BackoffLimiter({ limit: 2, windowSeconds: 30 }, clock);
    limiter.failure('a');
    clock.advance(3600);
    limiter.failure('a');
    expect(limiter.check('a').limited).toBe(true); // an hour is not enough to forget
    clock.advance(3630);
    limiter.failure('a');
    expect(limiter.check('a').limited).toBe(false);
  });

  it('undo takes back one counted attempt', () => {
    const clock = manualClock();
    const limiter = new BackoffLimiter({ limit: 1, windowSeconds: 30 }, clock);
    limiter.failure('a');
    expect(limiter.check('a').limited).toBe(true);
    limiter.undo('a');
    expect(limiter.check('a').limited).toBe(false);
  });
});

describe('perWorker: each of N cluster workers allows 1/N of a limit, rounded down', () => {
  it('splits the count, keeps the window, and leaves "off" and a single process alone', async () => {
    const { perWorker } = await import('../../src/limits/rate_limiters.js');
    expect(perWorker({ limit: 10, windowSeconds: 300 }, 1)).toEqual({ limit: 10, windowSeconds: 300 });
    expect(perWorker({ limit: 10, windowSeconds: 300 }, 2)).toEqual({ limit: 5, windowSeconds: 300 });
    expect(perWorker({ limit: 10, windowSeconds: 300 }, 3)).toEqual({ limit: 3, windowSeconds: 300 });
    expect(perWorker({ limit: 5, windowSeconds: 30 }, 4)).toEqual({ limit: 1, windowSeconds: 30 });
    expect(perWorker({ limit: 1, windowSeconds: 60 }, 4)).toEqual({ limit: 1, windowSeconds: 60 });
    expect(perWorker(undefined, 4)).toBeUndefined();
  });
});

describe('SlowLane (sign-in attempts on an account under a distributed attack)', () => {
  it('runs one attempt at a time per account, in order; other accounts are not held up', async () => {
    const lane = new SlowLane(10);
    let running = 0;
    let most = 0;
    const order: number[] = [];
    const attempt = (n: number) => async () => {
      running++;
      most = Math.max(most, running);
      // Yields to the event loop: were attempts not queued, the others would start meanwhile.
      await new Promise((r) => setImmediate(r));
      order.push(n);
      running--;
      return n;
    };
    const results = await Promise.all([1, 2, 3, 4].map((n) => lane.run('alice', attempt(n))));
    expect(results).toEqual([1, 2, 3, 4]);
    expect(order).toEqual([1, 2, 3, 4]);
    expect(most).toBe(1);
    running = 0;
    most = 0;
    await Promise.all([lane.run('alice', attempt(5)), lane.run('bob', attempt(6))]);
    expect(most).toBe(2);
  });

  it('refuses more than its bound of waiting attempts, and a failing attempt does not block the next', async () => {
    const lane = new SlowLane(2);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const first = lane.run('alice', () => gate.then(() => 'first'));
    const second = lane.run('alice', async () => {
      throw new Error('boom');
    });
    expect(await lane.run('alice', async () => 'third')).toBe(laneFull);
    release();
    expect(await first).toBe('first');
    await expect(second).rejects.toThrow('boom');
    expect(await lane.run('alice', async () => 'later')).toBe('later');
  });
});
