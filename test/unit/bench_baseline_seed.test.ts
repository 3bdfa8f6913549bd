import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { baselineSeedModule } from '../../bench/baseline_seed.js';

const checkouts: string[] = [];
afterEach(() => {
  for (const dir of checkouts.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A checkout with built seeding code at each of `places` (relative to its root). */
function checkout(...places: string[]): string {
  const root = mkdtempSync(join(tmpdir(), 'latchkey-baseline-'));
  checkouts.push(root);
  for (const place of places) {
    mkdirSync(join(root, place), { recursive: true });
    writeFileSync(join(root, place, 'seed.js'), 'export {};\n');
  }
  return root;
}

describe('baselineSeedModule (--baseline DIR)', () => {
  it("finds a checkout's seeding code in dist-bench/bench/, or in dist/bench/ where older checkouts built it", () => {
    const current = checkout('dist-bench/bench');
    expect(baselineSeedModule(current)).toBe(join(current, 'dist-bench', 'bench', 'seed.js'));
    const older = checkout('dist/bench');
    expect(baselineSeedModule(older)).toBe(join(older, 'dist', 'bench', 'seed.js'));
  });

  it('prefers dist-bench/bench/ over a stale dist/bench/, and names both places when neither is built', () => {
    const both = checkout('dist/bench', 'dist-bench/bench');
    expect(baselineSeedModule(both)).toBe(join(both, 'dist-bench', 'bench', 'seed.js'));
    const unbuilt = checkout();
    expect(() => baselineSeedModule(unbuilt)).toThrow(
      /no built bench seeding code there \(looked for .*dist-bench\/bench\/seed\.js and .*dist\/bench\/seed\.js\)/,
    );
  });
});
