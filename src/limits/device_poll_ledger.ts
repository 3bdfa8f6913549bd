/**
 * The time of each device code's latest poll, in this process's memory (RFC 8628 §3.5 slow_down).
 *
 * Two generations: new polls go into the current one, which becomes the previous one after
 * `windowMs` (or once it is half full), when the previous one is emptied for reuse. So a poll is
 * remembered for at least one window and memory never grows. Each generation is an open-addressing
 * table in two Float64Arrays (a 52-bit digest of the grant id → the poll time): recording a poll
 * allocates nothing. A Map of id strings kept every polled id alive for a window, and at thousands
 * of polls a second promoting them out of the young generation cost more than the poll itself.
 *
 * Two ids share a digest with odds of about n/2^52 (n polls remembered): negligible. Forgetting a
 * poll early costs at most one slow_down not answered to a device polling too fast; never a
 * refused poll or a lost approval.
 */

/** A 52-bit digest of a string (two FNV-1a hashes with different offsets), never 0 (the empty slot). */
export function idDigest(id: string): number {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 15);
  }
  return (a >>> 0) * 0x100000 + ((b >>> 12) & 0xfffff) || 1;
}

class PollTable {
  readonly keys: Float64Array;
  readonly times: Float64Array;
  size = 0;

  constructor(readonly capacity: number) {
    this.keys = new Float64Array(capacity);
    this.times = new Float64Array(capacity);
  }

  private slot(key: number): number {
    let i = key % this.capacity;
    while (this.keys[i] !== 0 && this.keys[i] !== key) i = i + 1 === this.capacity ? 0 : i + 1;
    return i;
  }

  get(key: number): number | undefined {
    const i = this.slot(key);
    return this.keys[i] === key ? this.times[i] : undefined;
  }

  set(key: number, time: number): void {
    const i = this.slot(key);
    if (this.keys[i] !== key) {
      this.keys[i] = key;
      this.size++;
    }
    this.times[i] = time;
  }

  clear(): void {
    if (this.size === 0) return;
    this.keys.fill(0);
    this.size = 0;
  }
}

export class DevicePollLedger {
  private current: PollTable;
  private previous: PollTable;
  private currentSinceMs: number | undefined;

  /** `maxEntries`: polls remembered at most (the tables hold twice as many slots, so probes stay short). */
  constructor(
    private readonly windowMs = 60_000,
    maxEntries = 200_000,
  ) {
    const perGeneration = Math.max(16, Math.ceil(maxEntries / 2));
    this.current = new PollTable(perGeneration * 2);
    this.previous = new PollTable(perGeneration * 2);
  }

  /** The latest poll of grant `id` this process remembers. */
  lastPoll(id: string): number | undefined {
    const key = idDigest(id);
    return this.current.get(key) ?? this.previous.get(key);
  }

  /** Remembers a poll of grant `id` at `atMs`. */
  record(id: string, atMs: number): void {
    this.currentSinceMs ??= atMs;
    if (atMs - this.currentSinceMs >= this.windowMs || this.current.size >= this.current.capacity / 2) {
      const emptied = this.previous;
      emptied.clear();
      this.previous = this.current;
      this.current = emptied;
      this.currentSinceMs = atMs;
    }
    this.current.set(idDigest(id), atMs);
  }

  /** How many polls are remembered (a grant polled in both generations counts twice). */
  get size(): number {
    return this.current.size + this.previous.size;
  }
}
