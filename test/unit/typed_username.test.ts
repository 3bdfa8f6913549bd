/**
 * A typed username prepared as an LDAP directory prepares it (RFC 4518 §2) before the throttle,
 * the local-name rule or a lookup sees it: every spelling a directory takes for one name is one.
 */
import { describe, expect, it } from 'vitest';
import { preparedUsername } from '../../src/oauth/typed_username.js';

describe('preparedUsername', () => {
  it('fullwidth and other compatibility forms are the ordinary letters (NFKC)', () => {
    expect(preparedUsername('ｌａｒａ')).toBe('lara');
    expect(preparedUsername('Ｌａｒａ１')).toBe('lara1');
    expect(preparedUsername('ﬁona')).toBe('fiona');
    expect(preparedUsername('\u212Aim')).toBe('kim'); // KELVIN SIGN
  });

  it('case is folded, the full way (ß and ss are one name)', () => {
    expect(preparedUsername('LARA')).toBe('lara');
    expect(preparedUsername('STRASSE')).toBe(preparedUsername('straße'));
    expect(preparedUsername('ΣΊΣΥΦΟΣ')).toBe(preparedUsername('σίσυφος'));
  });

  it('spaces at either end do not count, and a run of them inside counts as one', () => {
    expect(preparedUsername(' lara')).toBe('lara');
    expect(preparedUsername('LARA ')).toBe('lara');
    expect(preparedUsername('\tlara\u3000')).toBe('lara');
    expect(preparedUsername('lara  \u00a0 smith')).toBe('lara smith');
  });

  it('characters a directory ignores are ignored: soft hyphens, zero-width and format characters, controls', () => {
    for (const spelling of ['la\u00adra', 'la\u200bra', 'la\u200dra', 'lara\u2060', '\ufefflara', 'la\u034fra', 'lara\ufe0f', 'la\u0000ra', 'la\u007fra']) {
      expect(preparedUsername(spelling), JSON.stringify(spelling)).toBe('lara');
    }
  });

  it('leaves ordinary names as they are (lower case) and keeps other scripts', () => {
    expect(preparedUsername('dora.o-brien@example.org')).toBe('dora.o-brien@example.org');
    expect(preparedUsername('Jürgen')).toBe('jürgen');
    expect(preparedUsername('Jürgen')).toBe(preparedUsername('Ju\u0308rgen'));
    expect(preparedUsername('山田')).toBe('山田');
  });

  it('a name of nothing but spaces and ignored characters is empty', () => {
    expect(preparedUsername(' \u200b \u00ad ')).toBe('');
  });

  it('is stable: preparing twice changes nothing', () => {
    for (const s of ['ｌａｒａ', 'STRASSE', 'İstanbul', 'ǅemal', ' ΣΊΣΥΦΟΣ ', 'ﬃ', '¨a']) {
      expect(preparedUsername(preparedUsername(s)), s).toBe(preparedUsername(s));
    }
  });
});
