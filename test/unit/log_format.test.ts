/** LATCHKEY_LOG_FORMAT: who reads the output decides its form; a line for a person runs nothing on their terminal. */
import { describe, expect, it } from 'vitest';
import { humanLogLine, resolveLogFormat } from '../../src/logging.js';
import { parseTextLogLine } from '../helpers/logfmt.js';

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
    expect(shown).toBe('00:00:00 info  request  url="/x\\u001b]0;owned\\u0007\\u009b2J"\n');
    expect(shown.slice(0, -1)).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });

  it('quotes a value the logfmt way, so a request path cannot add a field: `/x status=200` stays the url', () => {
    const line = JSON.stringify({ level: 30, time: 0, msg: 'request', method: 'GET', url: '/x status=200 ip=6.6.6.6', status: 404 });
    const shown = humanLogLine(line);
    expect(shown).toBe('00:00:00 info  request  method=GET url="/x status=200 ip=6.6.6.6" status=404\n');
    expect(parseTextLogLine(shown).fields).toEqual([
      ['method', 'GET'],
      ['url', '/x status=200 ip=6.6.6.6'],
      ['status', '404'],
    ]);
  });

  it.each([
    ['a plain word', '/account/security', '/account/security'],
    ['nothing', '', '""'],
    ['a space', 'Unsupported Media Type', '"Unsupported Media Type"'],
    ['an =', '/a=b', '"/a=b"'],
    ['quotes', 'say "hi"', '"say \\"hi\\""'],
    ['a backslash', 'C:\\x', '"C:\\\\x"'],
    ['a line break', 'a\nstatus=1', '"a\\nstatus=1"'],
    ['a tab', 'a\tb', '"a\\tb"'],
    ['an escape sequence', '\u001b[2J', '"\\u001b[2J"'],
    ['a bidirectional override', 'a\u202eb', '"a\\u202eb"'],
    ['a no-break space', 'a\u00a0b=c', '"a\u00a0b=c"'],
  ])('%s: %j is written %s and read back as itself', (_what, value, written) => {
    const shown = humanLogLine(JSON.stringify({ level: 30, time: 0, msg: 'request', v: value }));
    expect(shown).toBe(`00:00:00 info  request  v=${written}\n`);
    expect(parseTextLogLine(shown).fields).toEqual([['v', value]]);
  });

  it('writes a value that is not text as JSON, quoted; a message that would read as fields is quoted too', () => {
    const shown = humanLogLine(JSON.stringify({ level: 50, time: 0, msg: 'failed for user=root  admin=true', err: { message: 'a b' }, n: 3, ok: true }));
    expect(shown).toBe('00:00:00 error "failed for user=root  admin=true"  err="{\\"message\\":\\"a b\\"}" n=3 ok=true\n');
    const parsed = parseTextLogLine(shown);
    expect(parsed.message).toBe('failed for user=root  admin=true');
    expect(parsed.fields).toEqual([
      ['err', '{"message":"a b"}'],
      ['n', '3'],
      ['ok', 'true'],
    ]);
    // A message of plain words stays as it is written.
    expect(humanLogLine(JSON.stringify({ level: 30, time: 0, msg: 'the signing keys can be used again' }))).toBe(
      '00:00:00 info  the signing keys can be used again\n',
    );
  });
});
