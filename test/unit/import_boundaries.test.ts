/**
 * The import-boundary check (.dependency-cruiser.cjs, run by `npm run lint:imports`): src/ keeps
 * every layering rule, and each rule really refuses what it names — shown on a small tree of
 * files that breaks them, so a rule that stopped matching (a renamed folder, an import the checker
 * no longer resolves) fails here instead of silently allowing everything.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const depcruise = join(root, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
const config = join(root, '.dependency-cruiser.cjs');

interface Violation {
  from: string;
  to: string;
  rule: { name: string; severity: string };
}

interface CruiseOutput {
  modules: { source: string; dependencies: { resolved: string }[] }[];
  summary: { violations: Violation[] };
}

/** Cruises `src` under `cwd` with the project's rules; the JSON answer, whatever the exit code. */
async function cruise(cwd: string): Promise<CruiseOutput> {
  try {
    const { stdout } = await run(process.execPath, [depcruise, 'src', '--config', config, '--output-type', 'json'], { cwd, maxBuffer: 64 * 1024 * 1024 });
    return JSON.parse(stdout) as CruiseOutput;
  } catch (err) {
    const stdout = (err as { stdout?: string }).stdout;
    if (stdout) return JSON.parse(stdout) as CruiseOutput;
    throw err;
  }
}

/** Each violation as `rule: from → to`; a cycle is reported once, from whichever of its modules the checker reached first, so as its two ends in order. */
const ruleBreaks = (output: CruiseOutput) =>
  output.summary.violations
    .map((v) => (v.rule.name === 'no-circular' ? `${v.rule.name}: ${[v.from, v.to].sort().join(' ↔ ')}` : `${v.rule.name}: ${v.from} → ${v.to}`))
    .sort();

describe('import boundaries', () => {
  it('src/ breaks none of the layering rules', async () => {
    const output = await cruise(root);
    expect(ruleBreaks(output)).toEqual([]);
    // The check saw the real graph: the app's imports of route files were resolved to the files.
    const app = output.modules.find((m) => m.source === 'src/app.ts');
    expect(app?.dependencies.map((d) => d.resolved)).toContain('src/routes/token.ts');
  }, 120_000);

  describe('on a tree that breaks each rule once', () => {
    let tree: string;
    const files: Record<string, string> = {
      'tsconfig.json': JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true }, include: ['src'] }),
      // Allowed: the app registers route plugins; a route folder's index registers its own folder's.
      'src/app.ts': "import { a } from './routes/a.js';\nimport { admin } from './routes/admin/index.js';\nexport const app = [a, admin];\n",
      'src/routes/a.ts': "import { h } from '../http/h.js';\nexport const a = h;\n",
      'src/routes/admin/index.ts': "import { p } from './p.js';\nimport { b } from '../b.js';\nexport const admin = [p, b];\n",
      'src/routes/admin/p.ts': 'export const p = 1;\n',
      // A route used as a library by another route.
      'src/routes/b.ts': "import { a } from './a.js';\nexport const b = a;\n",
      // Allowed: http/ uses oauth/.
      'src/http/h.ts': "import { x } from '../oauth/x.js';\nexport const h = x;\n",
      'src/oauth/x.ts': 'export const x = 1;\n',
      // A domain file importing a route file, and oauth/ importing http/.
      'src/oauth/o.ts': "import { a } from '../routes/a.js';\nimport { h } from '../http/h.js';\nexport const o = [a, h];\n",
      // The store reaching up.
      'src/store/s.ts': "import { x } from '../oauth/x.js';\nexport const s = x;\n",
      // A cycle.
      'src/limits/l1.ts': "import { l2 } from './l2.js';\nexport const l1 = () => l2;\n",
      'src/limits/l2.ts': "import { l1 } from './l1.js';\nexport const l2 = () => l1;\n",
      // A domain folder using the command line.
      'src/mail/m.ts': "import { c } from '../cli/c.js';\nexport const m = c;\n",
      'src/cli/c.ts': 'export const c = 1;\n',
      // The protocol core using the directory's input rules.
      'src/grants/g.ts': "import { d } from '../directory/d.js';\nexport const g = d;\n",
      'src/directory/d.ts': 'export const d = 1;\n',
      // A person's own account page handling the directory's admin errors itself.
      'src/directory/validation.ts': 'export class AdminInputError extends Error {}\n',
      'src/routes/account.ts': "import { AdminInputError } from '../directory/validation.js';\nexport const account = AdminInputError;\n",
    };

    beforeAll(async () => {
      tree = await mkdtemp(join(tmpdir(), 'latchkey-imports-'));
      for (const [path, text] of Object.entries(files)) {
        await mkdir(dirname(join(tree, path)), { recursive: true });
        await writeFile(join(tree, path), text);
      }
    });
    afterAll(async () => {
      await rm(tree, { recursive: true, force: true });
    });

    it('refuses exactly the imports that break a rule', async () => {
      expect(ruleBreaks(await cruise(tree))).toEqual(
        [
          'cli-only-from-cli: src/mail/m.ts → src/cli/c.ts',
          'domain-folders-never-import-routes-cli-or-the-server: src/mail/m.ts → src/cli/c.ts',
          'domain-folders-never-import-routes-cli-or-the-server: src/oauth/o.ts → src/routes/a.ts',
          'core-oauth-not-on-the-directory-or-console: src/grants/g.ts → src/directory/d.ts',
          'no-circular: src/limits/l1.ts ↔ src/limits/l2.ts',
          'protocol-logic-without-http: src/oauth/o.ts → src/http/h.ts',
          'route-folder-index-registers-its-own-folder: src/routes/admin/index.ts → src/routes/b.ts',
          'self-service-without-admin-errors: src/routes/account.ts → src/directory/validation.ts',
          'routes-only-from-the-app: src/oauth/o.ts → src/routes/a.ts',
          'routes-only-from-the-app: src/routes/b.ts → src/routes/a.ts',
          'store-is-the-bottom-layer: src/store/s.ts → src/oauth/x.ts',
        ].sort(),
      );
    }, 120_000);
  });
});
