/**
 * Finds the relative links of Markdown pages that lead nowhere: a file that does not exist, or an
 * `#anchor` that no heading of the target page produces. Anchors follow GitHub's rules for heading
 * ids (github-slugger): the heading's text as rendered, lower-cased, every character that is not a
 * letter, mark, digit, connector punctuation (`_`), hyphen or space removed, each space turned into
 * a hyphen, and a repeated id suffixed with -1, -2, … in order of appearance.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

export interface BrokenLink {
  /** The page the link is on, relative to the repository root. */
  page: string;
  /** The link's destination as written. */
  target: string;
  problem: string;
}

/** Every `.md` file under `dir`, recursively. */
export function markdownFilesUnder(dir: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) found.push(...markdownFilesUnder(path));
    else if (name.endsWith('.md')) found.push(path);
  }
  return found.sort();
}

/**
 * The text a reader sees, with code blanked out: fenced blocks and inline code spans hold
 * examples, not links (a `[x](y)` inside backticks is text). Blanking keeps line lengths, so
 * nothing else moves.
 */
function withoutCode(markdown: string): string {
  const lines = markdown.split('\n');
  let fence: string | undefined;
  const kept = lines.map((line) => {
    const opener = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (fence !== undefined) {
      if (opener?.[1] !== undefined && opener[1][0] === fence[0] && opener[1].length >= fence.length) fence = undefined;
      return '';
    }
    if (opener?.[1] !== undefined) {
      fence = opener[1];
      return '';
    }
    return line;
  });
  return kept
    .join('\n')
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(/(`+)([\s\S]*?[^`])\1(?!`)/g, (span) => ' '.repeat(span.length));
}

/** GitHub's id for a heading's rendered text (github-slugger, before de-duplication). */
export function githubSlug(renderedText: string): string {
  return renderedText
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** A heading's Markdown source reduced to the text GitHub renders. */
function renderedHeading(source: string): string {
  return source
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/`+/g, '')
    .replace(/(\*\*|__)(.+?)\1/g, '$2')
    .replace(/(^|[^\w*])([*_])(\S(?:.*?\S)?)\2(?=[^\w*]|$)/g, '$1$3')
    .trim();
}

/** Every anchor a page offers: its headings' ids, de-duplicated as GitHub does, and explicit ids. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const add = (base: string): void => {
    let id = base;
    let count = seen.get(base) ?? 0;
    while (anchors.has(id)) {
      count += 1;
      id = `${base}-${count}`;
    }
    seen.set(base, count);
    anchors.add(id);
  };
  let fence: string | undefined;
  const lines = markdown.split('\n');
  lines.forEach((line, i) => {
    const opener = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (fence !== undefined) {
      if (opener?.[1] !== undefined && opener[1][0] === fence[0] && opener[1].length >= fence.length) fence = undefined;
      return;
    }
    if (opener?.[1] !== undefined) {
      fence = opener[1];
      return;
    }
    const atx = /^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line);
    if (atx?.[1] !== undefined) {
      add(githubSlug(renderedHeading(atx[1])));
      return;
    }
    const next = lines[i + 1];
    const paragraphLine = line.trim() !== '' && !/^\s*([-*+>|]|\d+\.)/.test(line);
    if (next !== undefined && paragraphLine && /^\s{0,3}(=+|-+)\s*$/.test(next)) {
      add(githubSlug(renderedHeading(line)));
    }
  });
  for (const match of markdown.matchAll(/<a\s[^>]*(?:id|name)="([^"]+)"/g)) {
    if (match[1] !== undefined) anchors.add(match[1]);
  }
  return anchors;
}

/** The destinations of a page's links and images (inline, reference definitions and HTML). */
export function linkTargets(markdown: string): string[] {
  const text = withoutCode(markdown);
  const targets: string[] = [];
  const inline = /!?\[(?:[^[\]]|\[[^[\]]*\])*\]\(\s*(<[^>]*>|[^\s)]+)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g;
  for (const match of text.matchAll(inline)) {
    if (match[1] !== undefined) targets.push(match[1].replace(/^<|>$/g, ''));
  }
  for (const match of text.matchAll(/^\s{0,3}\[[^\]]+\]:\s*(\S+)/gm)) {
    if (match[1] !== undefined) targets.push(match[1]);
  }
  for (const match of text.matchAll(/<(?:a|img)\s[^>]*(?:href|src)="([^"]+)"/g)) {
    if (match[1] !== undefined) targets.push(match[1]);
  }
  return targets;
}

/** Whether a destination leaves the repository (a URL with a scheme, or protocol-relative). */
function isExternal(target: string): boolean {
  return /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//');
}

/**
 * Every relative link of `pages` (absolute paths) that points at a missing file or a missing
 * anchor. `root` is the repository root: paths starting with `/` resolve from it, as on GitHub.
 */
export function brokenLinks(root: string, pages: string[]): BrokenLink[] {
  const anchorCache = new Map<string, Set<string>>();
  const anchorsIn = (file: string): Set<string> => {
    let anchors = anchorCache.get(file);
    if (anchors === undefined) {
      anchors = anchorsOf(readFileSync(file, 'utf8'));
      anchorCache.set(file, anchors);
    }
    return anchors;
  };
  const broken: BrokenLink[] = [];
  for (const page of pages) {
    const where = relative(root, page);
    for (const target of linkTargets(readFileSync(page, 'utf8'))) {
      if (isExternal(target)) continue;
      const hashAt = target.indexOf('#');
      const pathPart = hashAt === -1 ? target : target.slice(0, hashAt);
      const anchor = hashAt === -1 ? undefined : decodeURIComponent(target.slice(hashAt + 1));
      const decodedPath = decodeURIComponent(pathPart.split('?')[0] ?? '');
      const file = decodedPath === '' ? page : decodedPath.startsWith('/') ? join(root, decodedPath) : resolve(dirname(page), decodedPath);
      if (!existsSync(file)) {
        broken.push({ page: where, target, problem: `no file ${relative(root, file)}` });
        continue;
      }
      if (anchor === undefined || !file.endsWith('.md') || statSync(file).isDirectory()) continue;
      if (!anchorsIn(file).has(anchor)) {
        broken.push({ page: where, target, problem: `no heading with the anchor #${anchor} in ${relative(root, file)}` });
      }
    }
  }
  return broken;
}
