/**
 * The configurable accent colour, as a small stylesheet served from this server (inline styles
 * would need 'unsafe-inline' in the CSP). Text on the accent is black or white, whichever
 * contrasts more (WCAG relative luminance), so any accent stays readable.
 */
function channel(hex: string): number {
  const c = parseInt(hex, 16) / 255;
  return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
}

export function relativeLuminance(color: string): number {
  return 0.2126 * channel(color.slice(1, 3)) + 0.7152 * channel(color.slice(3, 5)) + 0.0722 * channel(color.slice(5, 7));
}

export function textOn(color: string): '#000000' | '#ffffff' {
  const l = relativeLuminance(color);
  return (l + 0.05) / 0.05 >= 1.05 / (l + 0.05) ? '#000000' : '#ffffff';
}

export function themeCss(accentColor: string | undefined): string {
  if (accentColor === undefined) return '/* Latchkey: built-in accent colours */\n';
  const rule = `--accent: ${accentColor}; --accent-text: ${textOn(accentColor)};`;
  return `:root { ${rule} }\n@media (prefers-color-scheme: dark) { :root { ${rule} } }\n`;
}
