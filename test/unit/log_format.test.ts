/** LATCHKEY_LOG_FORMAT: who reads the output decides its form; a line for a person runs nothing on their terminal. */
import { describe, expect, it } from 'vitest';
import { humanLogLine, resolveLogFormat } from '../../src/logging.js';

describe('resolveLogFormat', () => {
  it.each([
    ['auto', true, 'text'],
    ['auto', false, 'json'],
    ['auto', undefined, 'json'],
    ['json', true, 'json'],
    ['text', false, 'text'],
  ] as const)('%s with stderr a terminal: %s → %s', (format, terminal, expected) => {
    expect(resolveLogFormat(format, terminal)).toBe(expected);
  });
});

describe('humanLogLine', () => {
  it('gives time, level, message and the other fields, without pid and hostname', () => {
    const line = JSON.stringify({
      level: 40,
      time: Date.UTC(2026, 0, 2, 3, 4, 5),
      pid: 7,
      hostname: 'h',
      event: 'startup.warning',
      msg: 'the key file can be read by other users',
    });
    expect(humanLogLine(`${line}\n`)).toBe('03:04:05 warn  the key file can be read by other users  event=startup.warning\n');
  });

  it('shows control characters of a logged value as escapes, so a request path cannot drive the terminal', () => {
    const line = JSON.stringify({ level: 30, time: 0, msg: 'request', url: '/x\u001b]0;owned\u0007\u009b2J' });
    const shown = humanLogLine(line);
    expect(shown).toBe('00:00:00 info  request  url=/x\\u001b]0;owned\\u0007\\u009b2J\n');
    expect(shown.slice(0, -1)).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });
});
