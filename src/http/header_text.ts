/**
 * Text from a request header, as a person should read it. Node hands header bytes over as latin1
 * (one character per byte), so a UTF-8 User-Agent such as "Café TV" arrives as "CafÃ© TV"; bytes
 * that are valid UTF-8 are decoded as such. Control and format characters are dropped and the
 * result is cut to `max` characters without splitting one.
 */
export function headerText(raw: string | undefined, max = 256): string | undefined {
  if (raw === undefined) return undefined;
  let text = raw;
  if (/[\u0080-\u00ff]/.test(raw) && !/[^\u0000-\u00ff]/.test(raw)) {
    const decoded = Buffer.from(raw, 'latin1').toString('utf8');
    if (!decoded.includes('\ufffd')) text = decoded;
  }
  // Control characters, and format characters (\p{Cf}: bidirectional overrides and isolates,
  // zero-width characters) that could make the text read as something else on a page.
  return Array.from(text.replace(/[\u0000-\u001f\u007f-\u009f]|\p{Cf}/gu, ''))
    .slice(0, max)
    .join('');
}
