/**
 * docs/performance.md's figures are generated from the bench runs kept beside it: the page says
 * what `npm run bench` printed, and a figure edited by hand (or a run added without regenerating)
 * fails here, naming the command that brings the page back in line.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  beginMarker,
  benchRunsDirectory,
  endMarker,
  performanceFigures,
  performancePageCommand,
  performancePagePath,
  readReport,
  withFigures,
} from '../../bench/performance_page.js';

const root = new URL('../../', import.meta.url).pathname;
const runs = readdirSync(join(root, benchRunsDirectory))
  .filter((name) => name.endsWith('.json'))
  .sort()
  .map((name) => readReport(readFileSync(join(root, benchRunsDirectory, name), 'utf8')));

describe('docs/performance.md', () => {
  it('shows exactly the figures the kept bench runs give', () => {
    const page = readFileSync(join(root, performancePagePath), 'utf8');
    expect(runs.length).toBeGreaterThanOrEqual(2);
    expect(page, `${performancePagePath} is stale: run \`${performancePageCommand}\` and commit the result`).toBe(withFigures(page, performanceFigures(runs)));
  });

  it('gives the side-by-side ratios, sign-ins against the hash rate and every target, for each run', () => {
    const figures = performanceFigures(runs);
    expect(figures).toContain('| device authorization |');
    expect(figures).toContain('Latchkey / oidc-provider');
    expect(figures).toContain('sign-ins / raw');
    expect(figures).toMatch(/\| sign-ins ≥ 85% of the raw password-hash rate|with TOTP: sign-ins ≥ 85%/);
    // One value per run in every cell of the targets.
    for (const line of figures
      .split('### Targets in these runs')[1]!
      .split('\n')
      .filter((l) => l.startsWith('| ') && !l.startsWith('| target'))) {
      expect(line.split('|')[3]!.split('·')).toHaveLength(runs.length);
    }
  });

  it('refuses a page without its generated section rather than writing it somewhere', () => {
    expect(() => withFigures('# Performance\n', 'x')).toThrow(beginMarker.slice(0, 20));
    expect(withFigures(`a\n${beginMarker}\nold\n${endMarker}\nb`, 'new')).toBe(`a\n${beginMarker}\n\nnew\n\n${endMarker}\nb`);
  });
});
