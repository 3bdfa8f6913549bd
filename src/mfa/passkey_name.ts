/**
 * Names people give their passkeys, shown back on their account page and in notices: 1-64
 * printable characters (NFC), no control or format characters, which could make one name look
 * like another or rewrite a terminal that prints it.
 */
export function passkeyName(typed: string, fallback: string): string | undefined {
  const name = typed.normalize('NFC').trim();
  if (name === '') return fallback;
  if (name.length > 64 || /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u.test(name)) return undefined;
  return name;
}
