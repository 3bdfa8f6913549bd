import { describe, expect, it } from 'vitest';
import { headerText } from '../../src/http/header_text.js';

/** What Node hands over for a header sent as UTF-8 bytes: one latin1 character per byte. */
const asReceived = (text: string) => Buffer.from(text, 'utf8').toString('latin1');

describe("headerText (a device's User-Agent shown as sent)", () => {
  it('decodes UTF-8 bytes', () => {
    expect(headerText(asReceived('Café TV — Wohnzimmer 📺'))).toBe('Café TV — Wohnzimmer 📺');
  });

  it('keeps plain ASCII and real latin1 (bytes that are not UTF-8) as they are', () => {
    expect(headerText('curl/8.5.0')).toBe('curl/8.5.0');
    expect(headerText('Caf\u00e9')).toBe('Caf\u00e9'); // a lone 0xE9 byte is not UTF-8
  });

  it('drops bidirectional overrides and zero-width characters that would disguise the text', () => {
    expect(headerText(asReceived('curl/8\u202Eexe.evil\u202C \u2066x\u2069\u200B\uFEFF'))).toBe('curl/8exe.evil x');
  });

  it('drops control characters and cuts to the limit without splitting a character', () => {
    expect(headerText('a\u0000b\u001bc\u0085d')).toBe('abcd');
    expect(headerText(asReceived('😀'.repeat(300)), 5)).toBe('😀'.repeat(5));
    expect(headerText(undefined)).toBeUndefined();
  });
});
