/**
 * Where a checkout measured with --baseline keeps its built seeding code: dist-bench/bench/ since
 * the bench has a build of its own, dist/bench/ in checkouts from before (their bench was built
 * inside the server's dist/). The newer place wins when a checkout has both (a stale dist/bench/
 * left by an older build).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export function baselineSeedModule(root: string): string {
  const candidates = [join(root, 'dist-bench', 'bench', 'seed.js'), join(root, 'dist', 'bench', 'seed.js')];
  const found = candidates.find((file) => existsSync(file));
  if (!found) throw new Error(`--baseline ${root}: no built bench seeding code there (looked for ${candidates.join(' and ')}); build that checkout first`);
  return found;
}
