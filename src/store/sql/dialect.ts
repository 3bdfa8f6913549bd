/**
 * What differs between the databases for one statement text, decided once per text: the text the
 * driver gets, and how the caller's parameters are laid out for it. Statements are written in
 * PostgreSQL's syntax; PostgreSQL takes them as they are, SQLite rewrites them (sqlite_dialect.ts).
 * Where there is no common form, a statement holds both (`either`).
 */

export interface CompiledStatement {
  text: string;
  /** The caller's parameters in the driver's order (SQLite's `?` are positional, $n may repeat). */
  params: (values: readonly unknown[]) => unknown[];
}

export interface Dialect {
  readonly name: 'sqlite' | 'postgres';
  compile(text: string): CompiledStatement;
}

/** Keeps each text's compiled form: a statement is compiled once, not at every call. */
export function compiledOnce(compile: (text: string) => CompiledStatement): (text: string) => CompiledStatement {
  const cache = new Map<string, CompiledStatement>();
  return (text) => {
    let compiled = cache.get(text);
    if (compiled === undefined) {
      compiled = compile(text);
      cache.set(text, compiled);
    }
    return compiled;
  };
}

/**
 * Text whose forms truly differ between the databases (a case-insensitive lookup through each
 * one's own index, an aggregate one of them lacks), kept in the statement as both, and picked when
 * the statement is compiled: a verb still writes one statement, with `either` where it must.
 */
export function either(texts: { sqlite: string; postgres: string }): string {
  return `\u0001${texts.sqlite}\u0002${texts.postgres}\u0003`;
}

/** The text of a statement for `dialect`: each `either` resolved. */
export function textFor(dialect: Dialect['name'], text: string): string {
  return text.replace(/\u0001([^\u0002]*)\u0002([^\u0003]*)\u0003/g, (_, sqlite: string, postgres: string) => (dialect === 'sqlite' ? sqlite : postgres));
}
