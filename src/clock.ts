/**
 * The only reader of the wall clock. A Clock returns epoch seconds as a fractional number: whole
 * seconds are what tokens and the store use, and the fraction is kept because poll spacing
 * (RFC 8628 §3.5, with a one-second allowance for jitter) needs sub-second resolution.
 * Tests pass a manual clock and advance it instead of sleeping.
 */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now() / 1000;

/** Whole epoch seconds, as stored and as put in JWT claims. */
export function epochSeconds(clock: Clock): number {
  return Math.floor(clock());
}

export interface ManualClock extends Clock {
  advance(seconds: number): void;
  set(seconds: number): void;
}

export function manualClock(start = 1_800_000_000): ManualClock {
  let now = start;
  const clock = (() => now) as ManualClock;
  clock.advance = (seconds) => {
    now += seconds;
  };
  clock.set = (seconds) => {
    now = seconds;
  };
  return clock;
}
