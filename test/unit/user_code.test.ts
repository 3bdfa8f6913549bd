import { describe, it, expect } from 'vitest';
import { formatUserCode, generateUserCode, lettersNeverUsed, normalizeUserCode, userCodeAlphabet, userCodeProblem } from '../../src/oauth/user_code.js';

const displayPattern = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/;

describe('generateUserCode', () => {
  it('always yields XXXX-XXXX over the 20 consonants', () => {
    const codes = Array.from({ length: 2000 }, () => generateUserCode());
    const bad = codes.filter((c) => !displayPattern.test(c));
    expect(bad).toEqual([]);
  });

  it('uses every letter of the alphabet and nothing else', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) for (const ch of generateUserCode().replace('-', '')) seen.add(ch);
    expect([...seen].sort().join('')).toBe(userCodeAlphabet);
    expect(userCodeAlphabet).toBe('BCDFGHJKLMNPQRSTVWXZ');
  });

  it('does not repeat itself over a few thousand draws', () => {
    const codes = new Set(Array.from({ length: 2000 }, () => generateUserCode()));
    // 20^8 ≈ 2.56e10 codes: a collision among 2000 has probability below 1e-4.
    expect(codes.size).toBe(2000);
  });

  it('round-trips through normalizeUserCode and formatUserCode', () => {
    for (let i = 0; i < 200; i++) {
      const code = generateUserCode();
      const canonical = normalizeUserCode(code);
      expect(canonical).toBe(code.replace('-', ''));
      expect(formatUserCode(canonical ?? '')).toBe(code);
    }
  });
});

describe('normalizeUserCode', () => {
  const accepted: Array<[string, string]> = [
    ['canonical', 'WDJBMJHT'],
    ['display form', 'WDJB-MJHT'],
    ['lower case', 'wdjb-mjht'],
    ['mixed case without dash', 'wDjBmJhT'],
    ['space instead of dash', 'WDJB MJHT'],
    ['surrounding and inner spaces', '  WDJB - MJHT  '],
    ['tab and newline', '\tWDJB\nMJHT\r\n'],
    ['no-break space', 'WDJB\u00a0MJHT'],
    ['several dashes', 'WD-JB--MJ-HT'],
    ['U+2010 hyphen', 'WDJB\u2010MJHT'],
    ['U+2011 non-breaking hyphen', 'WDJB\u2011MJHT'],
    ['U+2012 figure dash', 'WDJB\u2012MJHT'],
    ['U+2013 en dash', 'WDJB\u2013MJHT'],
    ['U+2014 em dash', 'WDJB\u2014MJHT'],
    ['U+2015 horizontal bar', 'WDJB\u2015MJHT'],
    ['exactly 64 characters with padding', 'WDJB-MJHT'.padEnd(64, ' ')],
  ];
  for (const [name, input] of accepted) {
    it(`accepts ${name}`, () => {
      expect(normalizeUserCode(input)).toBe('WDJBMJHT');
    });
  }

  const rejected: Array<[string, string]> = [
    ['empty', ''],
    ['only dashes and spaces', '- - -'],
    ['seven letters', 'WDJB-MJH'],
    ['nine letters', 'WDJB-MJHTB'],
    ['sixteen letters', 'WDJBMJHTWDJBMJHT'],
    ['a vowel A', 'WDJA-MJHT'],
    ['a vowel e (lower case)', 'wdje-mjht'],
    ['Y, which is not in the alphabet', 'WDJB-MJHY'],
    ['a digit', 'WDJB-MJH1'],
    ['a zero', 'WDJB-0JHT'],
    ['an underscore separator', 'WDJB_MJHT'],
    ['a dot separator', 'WDJB.MJHT'],
    ['65 characters even though the letters are right', 'WDJB-MJHT'.padEnd(65, ' ')],
    ['a very long input', 'B'.repeat(10_000)],
  ];
  for (const [name, input] of rejected) {
    it(`rejects ${name}`, () => {
      expect(normalizeUserCode(input)).toBeUndefined();
    });
  }
});

describe('formatUserCode', () => {
  it('puts a dash after the fourth letter', () => {
    expect(formatUserCode('WDJBMJHT')).toBe('WDJB-MJHT');
    expect(formatUserCode('BCDFGHJK')).toBe('BCDF-GHJK');
  });
});

describe('userCodeProblem: what is wrong with what a person typed', () => {
  it('the letters no code has are exactly the ones the page names: A, E, I, O, U, Y', () => {
    expect(lettersNeverUsed).toBe('AEIOUY');
  });

  it.each([
    ['', 'empty'],
    [' - ', 'empty'],
    ['BCDF-GHJ0', 'not_letters'],
    ['BCDF-GHJÉ', 'not_letters'],
    ['BCDF_GHJK', 'not_letters'],
    ['BCDF-GHJA', 'letters_never_used'],
    ['bcdf ghjy', 'letters_never_used'],
    ['hello', 'letters_never_used'],
    ['BCDF', 'too_short'],
    ['BCDF-GHJKL', 'too_long'],
    ['B'.repeat(65), 'too_long'],
    ['bcdf ghjk', undefined],
    ['BCDF–GHJK', undefined],
  ] as const)('%j → %s', (typed, problem) => {
    expect(userCodeProblem(typed)).toBe(problem);
    // What has no problem is a code in form, and the other way round.
    expect(normalizeUserCode(typed) === undefined).toBe(problem !== undefined);
  });
});
