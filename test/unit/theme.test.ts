import { describe, expect, it } from 'vitest';
import { relativeLuminance, textOn, themeCss } from '../../src/http/theme.js';

describe('theme', () => {
  it('computes WCAG relative luminance', () => {
    expect(relativeLuminance('#000000')).toBe(0);
    expect(relativeLuminance('#ffffff')).toBeCloseTo(1, 10);
    expect(relativeLuminance('#3451d1')).toBeCloseTo(0.1122, 3); // worked by hand: 0.2126·0.0343 + 0.7152·0.0823 + 0.0722·0.6376
  });

  it('puts the more contrasting of black and white on the accent', () => {
    expect(textOn('#ffcc00')).toBe('#000000');
    expect(textOn('#3451d1')).toBe('#ffffff');
    expect(textOn('#000000')).toBe('#ffffff');
    expect(textOn('#ffffff')).toBe('#000000');
  });

  it('the stylesheet sets the accent for both colour schemes, or nothing without one', () => {
    expect(themeCss('#ffcc00')).toBe(
      ':root { --accent: #ffcc00; --accent-text: #000000; }\n@media (prefers-color-scheme: dark) { :root { --accent: #ffcc00; --accent-text: #000000; } }\n',
    );
    expect(themeCss(undefined)).not.toContain('--accent');
  });
});
