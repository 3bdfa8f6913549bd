/**
 * Resolves the tests a document cites as `file › test name`: the file is under test/, and each
 * name after it is the title of an `it`, `test` or `describe` in that file (or in a test/ module it
 * imports, where shared suites such as the store conformance cases live). In a citation:
 * - a first segment `…` means the file cited just before it on the same line;
 * - a segment that is only `…` stands for any describe titles in between;
 * - `…` inside a name stands for any text (a name shortened as `first words …`).
 * Titles are read from the source without running it. A title made at run time — `${…}` in a
 * template, `%s` and `$name` of `.each` — matches a cited name when some title it can make does:
 * the two are compared as patterns, each placeholder and each `…` standing for any text.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

export interface Citation {
  /** The line of the document the citation is on (1-based). */
  line: number;
  /** The citation as written. */
  text: string;
  /** The cited file, relative to test/ (undefined when a leading `…` has nothing before it). */
  file: string | undefined;
  /** The names after the file, `…` segments included. */
  names: string[];
}

const separator = ' › ';
const ellipsis = '…';

/**
 * Every citation in `markdown`: the code spans that contain ` › `, or that are the path of a test
 * file on their own (a whole file cited).
 */
export function citationsIn(markdown: string): Citation[] {
  const citations: Citation[] = [];
  markdown.split('\n').forEach((lineText, index) => {
    let previousFile: string | undefined;
    for (const match of lineText.matchAll(/`([^`]+)`/g)) {
      const span = match[1]?.trim() ?? '';
      const wholeFile = /^[\w-]+\/[\w./-]+\.test\.ts$/.test(span);
      if (!span.includes(separator) && !wholeFile) continue;
      const segments = span.split(separator).map((segment) => segment.trim());
      const head = segments[0] ?? '';
      const file = head === ellipsis ? previousFile : head;
      if (head !== ellipsis) previousFile = head;
      citations.push({ line: index + 1, text: span, file, names: segments.slice(1) });
    }
  });
  return citations;
}

/** Reads a quoted or template string literal starting at `source[start]`; `${…}` kept as written. */
function readStringLiteral(source: string, start: number): { value: string; end: number } | undefined {
  const quote = source[start];
  if (quote !== "'" && quote !== '"' && quote !== '`') return undefined;
  let value = '';
  let i = start + 1;
  while (i < source.length) {
    const char = source[i];
    if (char === quote) return { value, end: i + 1 };
    if (char === '\\') {
      const escaped = source[i + 1] ?? '';
      const unicode = /^u\{([0-9a-fA-F]+)\}|^u([0-9a-fA-F]{4})|^x([0-9a-fA-F]{2})/.exec(source.slice(i + 1, i + 12));
      if (unicode !== null) {
        value += String.fromCodePoint(parseInt(unicode[1] ?? unicode[2] ?? unicode[3] ?? '0', 16));
        i += 1 + unicode[0].length;
        continue;
      }
      value += escaped === 'n' ? '\n' : escaped === 't' ? '\t' : escaped;
      i += 2;
      continue;
    }
    value += char ?? '';
    i += 1;
  }
  return undefined;
}

/** The index just past the bracketed group that opens at `source[start]`, strings skipped. */
function skipGroup(source: string, start: number): number {
  const open = source[start];
  const close = open === '(' ? ')' : open === '[' ? ']' : '}';
  let depth = 0;
  let i = start;
  while (i < source.length) {
    const char = source[i] ?? '';
    if (char === "'" || char === '"' || char === '`') {
      i = readStringLiteral(source, i)?.end ?? source.length;
      continue;
    }
    if (char === open) depth += 1;
    else if (char === close) {
      depth -= 1;
      if (depth === 0) return i + 1;
    }
    i += 1;
  }
  return source.length;
}

/** The index just past the type arguments (`<…>`) that open at `source[start]`; `=>` inside is no end. */
function skipTypeArguments(source: string, start: number): number {
  let depth = 0;
  for (let i = start; i < source.length; i += 1) {
    const char = source[i];
    if (char === '<') depth += 1;
    else if (char === '>' && source[i - 1] !== '=') {
      depth -= 1;
      if (depth === 0) return i + 1;
    }
  }
  return source.length;
}

/**
 * The titles of every `it`, `test` and `describe` in a test source (and of wrappers named after
 * them, such as `describeWithPostgres`), whatever modifiers come between the name and the title:
 * `it.skipIf(x)('title')`, `describe.each([...])('title %s')`, `(ok ? describe : describe.skip)('title')`.
 */
export function testTitles(source: string): string[] {
  const titles: string[] = [];
  for (const match of source.matchAll(/(?<![\w.$])(?:it|test|describe)[A-Za-z]*(?=[.()\s])/g)) {
    let i = match.index + match[0].length;
    for (;;) {
      while (/\s/.test(source[i] ?? '')) i += 1;
      if (source[i] === '.') {
        const modifier = /^\.\w+/.exec(source.slice(i));
        if (modifier === null) break;
        i += modifier[0].length;
        continue;
      }
      if (source[i] === ')' && source[i + 1] === '(') {
        i += 1;
        continue;
      }
      if (source[i] === '<') {
        i = skipTypeArguments(source, i);
        continue;
      }
      if (source[i] !== '(') break;
      let first = i + 1;
      while (/\s/.test(source[first] ?? '')) first += 1;
      const literal = readStringLiteral(source, first);
      if (literal !== undefined) {
        titles.push(literal.value);
        break;
      }
      i = skipGroup(source, i);
    }
  }
  return titles;
}

/** The test/ modules a test source imports, as absolute paths (`.js` specifiers read as `.ts`). */
function importedTestModules(file: string, source: string, testRoot: string): string[] {
  const modules: string[] = [];
  for (const match of source.matchAll(/from\s+'(\.{1,2}\/[^']+)'/g)) {
    const specifier = match[1] ?? '';
    const path = resolve(dirname(file), specifier.replace(/\.js$/, '.ts'));
    if (!relative(testRoot, path).startsWith('..') && existsSync(path)) modules.push(path);
  }
  return modules;
}

const titlesByFile = new Map<string, string[]>();

/** The titles defined in a test file and in the test/ modules it imports, transitively. */
export function titlesReachableFrom(file: string, testRoot: string): string[] {
  const known = titlesByFile.get(file);
  if (known !== undefined) return known;
  const titles: string[] = [];
  const visited = new Set<string>();
  const visit = (path: string): void => {
    if (visited.has(path)) return;
    visited.add(path);
    const source = readFileSync(path, 'utf8');
    titles.push(...testTitles(source));
    for (const module of importedTestModules(path, source, testRoot)) visit(module);
  };
  visit(file);
  titlesByFile.set(file, titles);
  return titles;
}

const normalise = (text: string): string => text.replace(/\s+/g, ' ').trim();

/** A name as a pattern: its text, and `true` where any text may stand. */
type Pattern = Array<string | true>;

function citedPattern(cited: string): Pattern {
  const pattern: Pattern = [];
  normalise(cited)
    .split(ellipsis)
    .forEach((piece, index) => {
      if (index > 0) pattern.push(true);
      pattern.push(...Array.from(piece.trim()));
    });
  return pattern;
}

function titlePattern(title: string): Pattern {
  const pattern: Pattern = [];
  const placeholders = /\$\{[^}]*\}|%[sdifjo#]|\$\w+/g;
  let last = 0;
  const text = normalise(title);
  for (const match of text.matchAll(placeholders)) {
    pattern.push(...Array.from(text.slice(last, match.index)), true);
    last = match.index + match[0].length;
  }
  pattern.push(...Array.from(text.slice(last)));
  return pattern;
}

/** Whether some text matches both patterns (every `true` standing for any text, empty included). */
function patternsMeet(a: Pattern, b: Pattern): boolean {
  // meets[i][j]: the rest of a from i and the rest of b from j can match one same text.
  const meets = Array.from({ length: a.length + 1 }, () => new Array<boolean>(b.length + 1).fill(false));
  const at = (i: number, j: number): boolean => meets[i]?.[j] ?? false;
  for (let i = a.length; i >= 0; i -= 1) {
    for (let j = b.length; j >= 0; j -= 1) {
      const x = a[i];
      const y = b[j];
      let value: boolean;
      if (x === undefined && y === undefined) value = true;
      else if (x === true) value = at(i + 1, j) || (y !== undefined && at(i, j + 1));
      else if (y === true) value = at(i, j + 1) || (x !== undefined && at(i + 1, j));
      else value = x !== undefined && x === y && at(i + 1, j + 1);
      const row = meets[i];
      if (row !== undefined) row[j] = value;
    }
  }
  return at(0, 0);
}

/** Whether a cited name (possibly shortened with `…`) names a title (possibly with placeholders). */
export function nameMatchesTitle(cited: string, title: string): boolean {
  const pattern = titlePattern(title);
  if (!pattern.includes(true)) {
    // A plain title: the cited name as a regular expression is enough, and much cheaper.
    const pieces = normalise(cited)
      .split(ellipsis)
      .map((piece) => piece.trim().replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    return new RegExp(`^${pieces.join('.*')}$`, 's').test(normalise(title));
  }
  return patternsMeet(citedPattern(cited), pattern);
}

/** Why a citation does not resolve, or undefined when it does. */
export function unresolved(citation: Citation, testRoot: string): string | undefined {
  if (citation.file === undefined) return 'starts with … but no file is cited before it on its line';
  const file = join(testRoot, citation.file);
  if (!existsSync(file)) return `no file test/${citation.file}`;
  const titles = titlesReachableFrom(file, testRoot);
  for (const name of citation.names) {
    if (name === ellipsis) continue;
    if (!titles.some((title) => nameMatchesTitle(name, title))) {
      return `no test or describe named "${name}" in test/${citation.file}`;
    }
  }
  return undefined;
}
