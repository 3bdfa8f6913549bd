/** What the command line prints of stored text: control characters shown as escapes, never run. */
import { describe, expect, it } from 'vitest';
import { table, json } from '../../src/cli/output.js';
import { terminalJson, visible } from '../../src/cli/terminal_text.js';

const raw = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

describe('visible', () => {
  it('shows escape sequences, line breaks, DEL and C1 controls as escapes', () => {
    expect(visible('\x1b[2J\x1b[HMallory\x1b]0;pwned\x07')).toBe('\\x1b[2J\\x1b[HMallory\\x1b]0;pwned\\x07');
    expect(visible('a@b.c\r\nX-Injected: yes')).toBe('a@b.c\\r\\nX-Injected: yes');
    expect(visible('tab\there\u007f\u009b')).toBe('tab\\there\\x7f\\x9b');
  });

  it('shows direction overrides and line separators, and keeps every other character', () => {
    expect(visible('invoice\u202egnp.exe')).toBe('invoice\\u202egnp.exe');
    expect(visible('a\u2028b')).toBe('a\\u2028b');
    expect(visible("Zoë 山田 عربي\u200f O'Brien")).toBe("Zoë 山田 عربي\u200f O'Brien");
  });
});

describe('the listings', () => {
  it('a table shows stored control characters as escapes, and stays aligned', () => {
    const out = table(
      [
        ['mallory', '\x1b[2JMallory', 'a@b.c\r\nX: y'],
        ['dora', 'Dora', 'dora@example.org'],
      ],
      ['USERNAME', 'NAME', 'EMAIL'],
    );
    expect(out).not.toMatch(raw);
    expect(out).toContain('\\x1b[2JMallory');
    expect(out.split('\n')).toHaveLength(4);
    const emailColumn = out.split('\n')[0]!.indexOf('EMAIL');
    expect(out.split('\n')[2]!.indexOf('dora@example.org')).toBe(emailColumn);
  });

  it('JSON is the same JSON to a parser, with nothing a terminal acts on', () => {
    const value = { name: '\x1b[2J\u009b31m\u007f', note: 'a\u202eb\u2028c', plain: 'Zoë' };
    const out = json(value);
    expect(out).not.toMatch(raw);
    expect(JSON.parse(out)).toEqual(value);
    expect(JSON.parse(terminalJson(value))).toEqual(value);
  });
});
