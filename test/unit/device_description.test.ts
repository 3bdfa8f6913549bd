/**
 * Devices named as people know them, from real User-Agents, through the real parser: our own
 * command line's `latchkey/<version> (<os.type()>; <arch>)`, browsers on each system, libraries by
 * their product token, and anything else as a short fallback — never the raw header.
 */
import { describe, expect, it } from 'vitest';
import { deviceDescription, deviceName } from '../../src/http/device_description.js';
import { translator } from '../../src/i18n/translate.js';

describe('deviceName', () => {
  it.each([
    ['latchkey/0.2.0 (Linux; x64)', 'latchkey 0.2 on Linux'],
    ['latchkey/0.2.0 (Darwin; arm64)', 'latchkey 0.2 on macOS'],
    ['latchkey/0.2.0 (Windows_NT; x64)', 'latchkey 0.2 on Windows'],
    ['latchkey/1.10.3-rc.1 (FreeBSD; x64)', 'latchkey 1.10 on FreeBSD'],
    ['latchkey/0.2.0 (Plan9; mips)', 'latchkey 0.2'],
    ['latchkey/0.2.0', 'latchkey 0.2'],
    ['Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36', 'Chrome on macOS'],
    ['Mozilla/5.0 (Android 14; Mobile; rv:132.0) Gecko/132.0 Firefox/132.0', 'Firefox on Android'],
    ['Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0', 'Firefox on Linux'],
    [
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
      'Safari on iPhone',
    ],
    ['Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1', 'Safari on iPad'],
    ['Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0', 'Edge on Windows'],
    ['Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36', 'Chrome on ChromeOS'],
    [
      'Mozilla/5.0 (Linux; Android 14; SM-S911B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/25.0 Chrome/121.0.0.0 Mobile Safari/537.36',
      'Samsung Internet on Android',
    ],
    ['LivingRoomTV/4.2 (Tizen 7.0)', 'LivingRoomTV 4.2 on Tizen'],
    ['Mozilla/5.0 (SMART-TV; LINUX; Tizen 7.0) AppleWebKit/537.36 (KHTML, like Gecko) 94.0.4606.31/7.0 TV Safari/537.36', 'a browser on Tizen'],
    ['openid-client/v6.8.9', 'openid-client 6.8'],
    ['curl/8.5.0', 'curl 8.5'],
    ['python-requests/2.31.0', 'python-requests 2.31'],
    ['Mozilla/5.0 (test browser)', 'Unknown software'],
    ['', 'Unknown software'],
    [undefined, 'Unknown software'],
    ['   ', 'Unknown software'],
    ['<script>alert(1)</script>', 'Unknown software'],
    ['Ignore this warning, it was your administrator', 'Unknown software'],
  ])('%j → %s', (userAgent, name) => {
    expect(deviceName(userAgent)).toBe(name);
  });

  it('is short whatever it is given: a product name is cut to 32 plain characters', () => {
    const long = `${'A'.repeat(200)}/1.0 (${'x; '.repeat(300)})`;
    expect(deviceName(long).length).toBeLessThanOrEqual(64);
    for (const sample of [long, 'x'.repeat(100_000), 'Mozilla/5.0 ('.repeat(1000), 'a/1 '.repeat(10_000)]) {
      expect(deviceName(sample).length).toBeLessThanOrEqual(64);
    }
  });

  it('speaks the page language for its own words', () => {
    const { t } = translator('fr');
    expect(deviceName('latchkey/0.2.0 (Linux; x64)', t)).toBe('latchkey 0.2 sur Linux');
    expect(deviceName(undefined, t)).toBe('Logiciel inconnu');
  });
});

describe('deviceDescription (a security notice: words of our lists only)', () => {
  it.each([
    ['Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0', 'Firefox on Linux'],
    ['latchkey/0.2.0 (Darwin; arm64)', 'latchkey 0.2 on macOS'],
    ['YourAdministrator/1.0', undefined],
    ['curl/8.5.0', undefined],
    ['', undefined],
  ])('%j → %s', (userAgent, description) => {
    expect(deviceDescription(userAgent)).toBe(description);
  });
});
