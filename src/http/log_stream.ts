/**
 * The server's log destination in one process: the lines of one turn of the event loop go out
 * together, in one write(2), at the end of the turn (or sooner past 64 KiB). Line by line, pino's
 * asynchronous destination started a write on libuv's thread pool for nearly every line and
 * measured the bytes of its whole pending buffer at each one: at thousands of requests a second a
 * tenth of a short request's cost. The write is synchronous (sonic-boom in sync mode, which waits
 * and retries when a pipe is full): a log reader that cannot keep up slows the server down rather
 * than letting lines pile up in memory. Lines still waiting when the process exits are written then.
 */
import { pino } from 'pino';

/** Past this many characters waiting, they go out at once rather than at the end of the turn. */
const maxPendingChars = 64 * 1024;

/** What each stream writes out at exit: one process listener for all of them. */
const atExit = new Set<() => void>();
process.once('exit', () => {
  for (const finish of atExit) {
    try {
      finish();
    } catch {
      // Nothing more can be done for a log at exit.
    }
  }
});

export interface LogStream {
  write(line: string): void;
  /** Writes what is waiting now (pino's logger.flush(cb) comes here). */
  flush(callback?: (err?: Error) => void): void;
}

export function batchedLogStream(destination: { write(data: string): unknown; flushSync(): void } = pino.destination({ dest: 1, sync: true })): LogStream {
  let pending: string[] = [];
  let pendingChars = 0;
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (pending.length === 0) return;
    const lines = pending.join('');
    pending = [];
    pendingChars = 0;
    destination.write(lines);
  };
  atExit.add(() => {
    flush();
    destination.flushSync();
  });
  return {
    write(line) {
      pending.push(line);
      pendingChars += line.length;
      if (pendingChars >= maxPendingChars) flush();
      else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    flush(callback) {
      try {
        flush();
      } catch (err) {
        callback?.(err as Error);
        return;
      }
      callback?.();
    },
  };
}
