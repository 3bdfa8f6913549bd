/**
 * SQLite's reading of the statements, written in PostgreSQL's syntax: what dex's "flavors" do for
 * its one SQL storage. Each rewrite is mechanical and done once per statement text:
 * - $1, $2 … become ? in order of appearance (a placeholder may repeat or come out of order);
 * - casts (::text, ::bigint …) go, and so do row locks (FOR UPDATE / FOR SHARE: SQLite has one
 *   writer, and every multi-statement verb runs in an IMMEDIATE transaction that holds it);
 * - byte order is COLLATE BINARY, not COLLATE "C"; greatest/least are max/min; json_agg and
 *   json_build_object are json_group_array and json_object; ctid is rowid; the epoch is unixepoch();
 * - an array parameter (= ANY($1::text[]), unnest($1::text[])) is bound as JSON and read with json_each;
 * - a boolean parameter is bound as 1 or 0 (SQLite has no boolean, and its driver binds none).
 * String literals are left as they are.
 */
import { compiledOnce, textFor, type CompiledStatement, type Dialect } from '../sql/dialect.js';

/** The code between string literals, rewritten; the literals ('…') kept as they are. */
function outsideQuotes(text: string, rewrite: (code: string) => string): string {
  return text
    .split(/('(?:[^']|'')*')/)
    .map((part, i) => (i % 2 === 1 ? part : rewrite(part)))
    .join('');
}

const rewrites: Array<[RegExp, string]> = [
  [/=\s*ANY\((\$\d+)::\w+\[\]\)/g, 'IN (SELECT value FROM json_each($1))'],
  [/unnest\((\$\d+)::\w+\[\]\)\s+AS\s+(\w+)/gi, '(SELECT value AS $2 FROM json_each($1))'],
  [/COLLATE\s+"C"/g, 'COLLATE BINARY'],
  [/floor\(extract\(epoch FROM (?:clock_timestamp|now)\(\)\)\)(?:::bigint)?/gi, 'unixepoch()'],
  [/extract\(epoch FROM (?:clock_timestamp|now)\(\)\)/gi, 'unixepoch()'],
  [/::(?:text|bigint|integer|int|boolean|jsonb|json|double precision)(?:\[\])?/g, ''],
  [/\s+FOR\s+(?:NO\s+KEY\s+)?(?:KEY\s+)?(?:UPDATE|SHARE)\b/g, ''],
  [/\bgreatest\(/g, 'max('],
  [/\bleast\(/g, 'min('],
  [/\bjson_agg\(/g, 'json_group_array('],
  [/\bjson_build_object\(/g, 'json_object('],
  [/\bctid\b/g, 'rowid'],
];

/** A JavaScript value as SQLite's driver binds it. */
function bindable(value: unknown): unknown {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (Array.isArray(value)) return JSON.stringify(value);
  return value;
}

export function compileForSqlite(source: string): CompiledStatement {
  const order: number[] = [];
  const text = outsideQuotes(textFor('sqlite', source), (code) => {
    let out = code;
    for (const [pattern, replacement] of rewrites) out = out.replace(pattern, replacement);
    return out.replace(/\$(\d+)/g, (_, n: string) => {
      order.push(Number(n) - 1);
      return '?';
    });
  });
  return {
    text,
    params: (values) => {
      const bound = new Array<unknown>(order.length);
      for (let i = 0; i < order.length; i++) bound[i] = bindable(values[order[i] ?? i]);
      return bound;
    },
  };
}

export const sqliteDialect: Dialect = { name: 'sqlite', compile: compiledOnce(compileForSqlite) };
