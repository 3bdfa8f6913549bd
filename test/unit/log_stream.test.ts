/**
 * The server's log destination (http/log_stream.ts): the lines of one turn of the event loop go
 * out in one write, in order; a large batch goes out at once; what is waiting at exit is written.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { batchedLogStream } from '../../src/http/log_stream.js';

function recordingDestination() {
  const writes: string[] = [];
  return { writes, destination: { write: (data: string) => void writes.push(data), flushSync: () => undefined } };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('batchedLogStream', () => {
  it('writes the lines of one turn together, in order, at the end of the turn', async () => {
    const { writes, destination } = recordingDestination();
    const stream = batchedLogStream(destination);
    stream.write('{"a":1}\n');
    stream.write('{"b":2}\n');
    expect(writes).toEqual([]);
    await nextTurn();
    expect(writes).toEqual(['{"a":1}\n{"b":2}\n']);
    stream.write('{"c":3}\n');
    await nextTurn();
    expect(writes).toEqual(['{"a":1}\n{"b":2}\n', '{"c":3}\n']);
    await nextTurn();
    expect(writes).toHaveLength(2);
  });

  it('writes at once past 64 KiB waiting, so a burst never piles up', () => {
    const { writes, destination } = recordingDestination();
    const stream = batchedLogStream(destination);
    const line = `${'x'.repeat(1023)}\n`;
    for (let i = 0; i < 64; i++) stream.write(line);
    expect(writes).toHaveLength(1);
    expect(writes[0]).toBe(line.repeat(64));
  });

  it('writes what is waiting when the process exits in the same turn (the built server)', () => {
    const built = fileURLToPath(new URL('../../dist/http/log_stream.js', import.meta.url));
    const script = `import(${JSON.stringify(built)}).then(({ batchedLogStream }) => {
      const stream = batchedLogStream();
      for (let i = 0; i < 1000; i++) stream.write(JSON.stringify({ line: i }) + '\\n');
      process.exit(0);
    });`;
    const run = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { line: number });
    expect(lines.map((l) => l.line)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
  });
});
