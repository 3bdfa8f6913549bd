/**
 * Waiting for something to happen instead of sleeping a fixed time: a fixed sleep is too short on a
 * loaded machine (a flaky test) and too long everywhere else (a slow suite). `waitFor` checks a
 * condition until it holds and hands back what it returned, or fails once the deadline passes,
 * naming what it waited for and the last error the check threw.
 */
import { setTimeout as pause } from 'node:timers/promises';

export interface WaitOptions {
  /** Milliseconds before giving up (default 10 s: generous for a shared 2-core machine). */
  timeout?: number;
  /** Milliseconds between checks (default 20). */
  interval?: number;
  /** What is awaited, for the failure message. */
  what?: string;
}

type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

/** Resolves with the first truthy value `check` returns (a check that throws counts as not yet). */
export async function waitFor<T>(check: () => T | Promise<T>, options: WaitOptions = {}): Promise<Truthy<T>> {
  const { timeout = 10_000, interval = 20, what = 'the condition' } = options;
  const deadline = Date.now() + timeout;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as Truthy<T>;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const reason = lastError instanceof Error ? `: ${lastError.message}` : '';
      throw new Error(`waited ${timeout} ms for ${what}${reason}`);
    }
    // The interval between checks, not a wait for the event itself: the event is the check.
    await pause(interval);
  }
}
