/**
 * Text the command line did not write itself — what the database holds (names, emails, groups a
 * connector copied from upstream, client names from dynamic registration), what a server answers —
 * made safe for the terminal it is printed on. A terminal runs the control characters it is sent:
 * ESC [ … moves the cursor, recolours, rewrites lines already shown; CR returns to the start of
 * the line, so a value can print over the columns beside it; an OSC sequence can set the window
 * title or write a hyperlink. Each such character is shown instead as an escape, the way a
 * programmer would write it (`\x1b`, `\r`, `\u202e`), so the operator sees that it is there.
 * Bidirectional overrides and isolates (which make text read otherwise than it is) and line
 * separators are shown the same way.
 */

const shown = /[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

const named: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escapeOf(c: string): string {
  const code = c.charCodeAt(0);
  return named[c] ?? (code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`);
}

/** `text` with every control character shown as an escape (`\x1b`, `\n`, `\u202e`). */
export function visible(text: string): string {
  return text.replace(shown, escapeOf);
}

const rawInJson = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * JSON as JSON.stringify writes it, with the characters it leaves raw inside strings (DEL, the C1
 * controls — 0x9b is CSI to many terminals —, line separators, bidirectional overrides) written as
 * \u escapes: the same JSON to a parser, nothing a terminal acts on.
 */
export function terminalJson(value: unknown, indent?: number): string {
  // C0 controls are escaped by JSON.stringify already; the new lines of the indentation are its own.
  // JSON.stringify(undefined) is undefined, whatever lib.d.ts says.
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition
  return (JSON.stringify(value, null, indent) ?? 'null').replace(rawInJson, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
