/**
 * docs/threat-model.md backs each protection with the tests that fail if it breaks, cited as
 * `file › test name`. A test renamed, moved or deleted would leave a row that claims a proof it no
 * longer has; every citation must therefore resolve to a file under test/ and a test in it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { citationsIn, nameMatchesTitle, testTitles, unresolved } from './test_citations.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const testRoot = join(root, 'test');

describe('the threat model cites tests that exist', () => {
  const threatModel = readFileSync(join(root, 'docs', 'threat-model.md'), 'utf8');
  const citations = citationsIn(threatModel);

  it('cites tests at all (the citations are found)', () => {
    expect(citations.length).toBeGreaterThan(200);
  });

  it('every cited file exists under test/ and holds a test or describe of each cited name', () => {
    const problems = citations.flatMap((citation) => {
      const why = unresolved(citation, testRoot);
      return why === undefined ? [] : [`docs/threat-model.md:${citation.line} \`${citation.text}\`: ${why}`];
    });
    expect(problems).toEqual([]);
  });
});

describe('the citation resolver', () => {
  it('reads titles through modifiers, type arguments, .each tables, wrappers and template literals', () => {
    const source = [
      "describe('outer', () => {",
      "  it('plain title', () => {});",
      '  it.skipIf(process.platform === "win32")("after a modifier", () => {});',
      "  it.each<[string, (x: number) => boolean]>([['a', () => true]])('with a table: %s', () => {});",
      '  describe(`Store conformance: ${name}`, () => {});',
      "  test('it\\'s escaped, \\u2019 too', () => {});",
      "  (ok ? describe : describe.skip)('chosen at run time', () => {});",
      "  describeWithPostgres('a wrapper', () => {});",
      '});',
    ].join('\n');
    expect(testTitles(source)).toEqual([
      'outer',
      'plain title',
      'after a modifier',
      'with a table: %s',
      'Store conformance: ${name}',
      "it's escaped, \u2019 too",
      'chosen at run time',
      'a wrapper',
    ]);
  });

  it('matches whole names, names shortened with …, and titles made at run time; nothing else', () => {
    expect(nameMatchesTitle('plain title', 'plain title')).toBe(true);
    expect(nameMatchesTitle('plain …', 'plain title')).toBe(true);
    expect(nameMatchesTitle('… title', 'plain title')).toBe(true);
    expect(nameMatchesTitle('dynamic client registration …', 'dynamic client registration')).toBe(true);
    expect(nameMatchesTitle('Store conformance: SQLite', 'Store conformance: ${name}')).toBe(true);
    expect(nameMatchesTitle('the code of another client …', '${name} → invalid_grant, and the code still works')).toBe(true);
    expect(nameMatchesTitle('plain titles', 'plain title')).toBe(false);
    expect(nameMatchesTitle('plain', 'plain title')).toBe(false);
    expect(nameMatchesTitle('another title …', 'plain title')).toBe(false);
    expect(nameMatchesTitle('the code of another client …', '${name} → invalid_grant')).toBe(true);
    expect(nameMatchesTitle('… another client', '${name} → invalid_grant')).toBe(false);
  });

  it('reports a missing file, a missing test and a leading … with nothing before it', () => {
    const cited = citationsIn(
      [
        '| row | `unit/no_such_file.test.ts › anything` |',
        '| row | `docs/threat_model_citations.test.ts › the citation resolver › no test of this name` |',
        '| row | `… › a test with no file before it` |',
        '| row | `docs/threat_model_citations.test.ts › the citation resolver › reads titles …`; `… › … › matches whole names, …` |',
      ].join('\n'),
    );
    expect(cited.map((citation) => unresolved(citation, testRoot))).toEqual([
      'no file test/unit/no_such_file.test.ts',
      'no test or describe named "no test of this name" in test/docs/threat_model_citations.test.ts',
      'starts with … but no file is cited before it on its line',
      undefined,
      undefined,
    ]);
  });
});
