/**
 * A strict reader of the text log format (LATCHKEY_LOG_FORMAT=text): `HH:MM:SS level  message  key=value …`,
 * the fields in logfmt as go-logfmt reads them — a bare value ends at whitespace and holds no `=`
 * or `"`, a quoted one ends at its closing quote with `\\`, `\"`, `\n`, `\r`, `\t` and `\uXXXX`
 * escapes. Anything else is an error, so a test sees exactly the fields a log reader would.
 */

export interface TextLogLine {
  time: string;
  level: string;
  message: string;
  fields: [key: string, value: string][];
}

/** A quoted logfmt string starting at `text[start]` (a `"`): its value and where it ends. */
function readQuoted(text: string, start: number): { value: string; end: number } {
  let value = '';
  for (let i = start + 1; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') return { value, end: i + 1 };
    if (c !== '\\') {
      value += c;
      continue;
    }
    const next = text[++i];
    if (next === 'n') value += '\n';
    else if (next === 'r') value += '\r';
    else if (next === 't') value += '\t';
    else if (next === '"' || next === '\\') value += next;
    else if (next === 'u' && /^[0-9a-f]{4}$/i.test(text.slice(i + 1, i + 5))) {
      value += String.fromCharCode(parseInt(text.slice(i + 1, i + 5), 16));
      i += 4;
    } else throw new Error(`not logfmt: a bad escape at ${i} in ${JSON.stringify(text)}`);
  }
  throw new Error(`not logfmt: an unclosed quote in ${JSON.stringify(text)}`);
}

/** The fields of `text`: `key=value` pairs separated by one space. */
export function logfmtFields(text: string): [string, string][] {
  const fields: [string, string][] = [];
  let i = 0;
  while (i < text.length) {
    const equals = text.indexOf('=', i);
    if (equals < 0) throw new Error(`not logfmt: a key without a value at ${i} in ${JSON.stringify(text)}`);
    const key = text.slice(i, equals);
    if (!/^[\w.\-/:@]+$/.test(key)) throw new Error(`not logfmt: the key ${JSON.stringify(key)} in ${JSON.stringify(text)}`);
    let value: string;
    let end: number;
    if (text[equals + 1] === '"') {
      ({ value, end } = readQuoted(text, equals + 1));
    } else {
      const space = text.indexOf(' ', equals + 1);
      end = space < 0 ? text.length : space;
      value = text.slice(equals + 1, end);
      if (/[\s="\\]/.test(value)) throw new Error(`not logfmt: the bare value ${JSON.stringify(value)} of ${key}`);
    }
    fields.push([key, value]);
    if (end === text.length) break;
    if (text[end] !== ' ' || end + 1 === text.length) throw new Error(`not logfmt: after ${key} in ${JSON.stringify(text)}`);
    i = end + 1;
  }
  return fields;
}

/** One line of the text format, its trailing newline included or not. */
export function parseTextLogLine(line: string): TextLogLine {
  const text = line.replace(/\n$/, '');
  const head = /^(\d\d:\d\d:\d\d) (\S+) +/.exec(text);
  if (!head) throw new Error(`not a text log line: ${JSON.stringify(text)}`);
  const rest = text.slice(head[0].length);
  let message: string;
  let after: string;
  if (rest.startsWith('"')) {
    const { value, end } = readQuoted(rest, 0);
    message = value;
    after = rest.slice(end);
  } else {
    const gap = rest.indexOf('  ');
    message = gap < 0 ? rest : rest.slice(0, gap);
    after = gap < 0 ? '' : rest.slice(gap);
  }
  if (after !== '' && !after.startsWith('  ')) throw new Error(`not a text log line: no two spaces before the fields in ${JSON.stringify(text)}`);
  return { time: head[1]!, level: head[2]!, message, fields: after === '' ? [] : logfmtFields(after.slice(2)) };
}
