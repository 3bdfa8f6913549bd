/**
 * `npm run bench` as a smoke run (--quick: a second per scenario), as CI runs it on a clean clone:
 * every scenario drives the built server over a real socket and gets only the answers it expects
 * (200s, or authorization_pending for the pending polls: never slow_down, never a spent code), each
 * family of runs (a store scale, two workers, the peers oidc-provider and bare Fastify, a baseline
 * build) runs once, and the report ends in one JSON line with the ratios
 * (bench_postgres.e2e.test.ts: the same on PostgreSQL). Speed is not asserted here: the figures
 * live in the README.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { bench, expectOnlyExpectedAnswers } from '../helpers/bench.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * This checkout's build laid out as checkouts from before the bench had a build of its own (last
 * week's main): the server in dist/, the bench's seeding code in dist/bench/, no dist-bench/.
 */
function olderLayoutCheckout(): string {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-older-checkout-'));
  mkdirSync(join(dir, 'dist'));
  for (const entry of readdirSync(join(root, 'dist')).filter((name) => name !== 'bench')) symlinkSync(join(root, 'dist', entry), join(dir, 'dist', entry));
  symlinkSync(join(root, 'dist-bench', 'bench'), join(dir, 'dist', 'bench'));
  return dir;
}

describe('npm run bench (smoke run)', () => {
  // RS256 throughout: the bench seeds as many codes and tokens as the signing rate lets the server
  // redeem, a few thousand here against tens of thousands with ES256.
  it('runs every scenario (browser sign-ins too, with and without a TOTP step), each answered only as expected, and prints the table, the targets and one JSON line', () => {
    const { report, stdout } = bench(['--alg', 'RS256', '--workers', '', '--scales', '']);
    expect(report.signingRates.RS256).toBeGreaterThan(0);
    expect(report.runs.map((r) => r.label)).toEqual(['RS256, 1 worker']);
    expect(report.runs[0]?.scenarios.map((s) => s.scenario)).toEqual([
      'device_authorization',
      'device_poll_pending',
      'device_token_issuance',
      'code_exchange',
      'refresh',
      'userinfo',
      'jwks',
      'browser_sign_in',
      'browser_sign_in_totp',
    ]);
    for (const run of report.runs) expectOnlyExpectedAnswers(run.scenarios, run.label);
    expect(report.runs[0]?.scenarios[1]?.answers['error:authorization_pending']).toBeGreaterThan(0);
    // Whole sign-ins through the pages, each ending in a token response, beside the raw password rate of the same core.
    expect(report.runs[0]?.scenarios[7]?.answers['200']).toBeGreaterThan(0);
    // The same with a TOTP second step: every sign-in answered its code and ended in tokens, and no
    // browser had to wait for a fresh step (enough accounts that none presents a code twice in one).
    expect(report.runs[0]?.scenarios[8]?.answers).toEqual({ '200': expect.any(Number) });
    expect(report.runs[0]?.scenarios[8]?.answers['200']).toBeGreaterThan(0);
    expect(report.signIns.map((s) => [s.run, s.scenario])).toEqual([
      ['RS256, 1 worker', 'browser_sign_in'],
      ['RS256, 1 worker', 'browser_sign_in_totp'],
    ]);
    const [signIns, totpSignIns] = report.signIns;
    expect(signIns!.passwordVerificationsPerSecond).toBe(report.runs[0]?.passwordRateAtSignIn);
    expect(totpSignIns!.passwordVerificationsPerSecond).toBe(report.runs[0]?.passwordRateAtTotpSignIn);
    expect(totpSignIns!.signInsPerSecond).toBe(report.runs[0]?.scenarios[8]?.requestsPerSecond);
    for (const s of [signIns!, totpSignIns!]) {
      expect(s.ofPasswordRate).toBeCloseTo(s.signInsPerSecond / s.passwordVerificationsPerSecond, 6);
      expect(s.ofPasswordCpuRate).toBeCloseTo(1e6 / s.cpuMicrosecondsPerSignIn / s.passwordVerificationsPerCpuSecond, 6);
    }
    expect(stdout).toContain('RS256, 1 worker, with TOTP:');
    expect(stdout).toContain('Browser sign-ins');
    // The issuance target is a ratio to the raw signing rate measured around that scenario.
    expect(report.runs[0]?.signingRateAtIssuance).toBeGreaterThan(0);
    expect(report.targets.map((t) => t.target)).toEqual(expect.arrayContaining([expect.stringContaining('of the raw signing rate')]));
    expect(stdout).toContain('Targets');
  }, 300_000);

  it('runs each family once (a store scale, two workers, oidc-provider and bare Fastify side by side) and reports the ratios', () => {
    const { report, stdout } = bench([
      '--peer',
      '--alg',
      'RS256',
      '--workers',
      '2',
      '--scales',
      '1000',
      '--scenarios',
      'device_authorization,device_token_issuance',
    ]);
    expect(report.runs.map((r) => [r.label, r.storedDeviceGrants, r.scenarios.map((s) => s.scenario)])).toEqual([
      ['RS256, 1 worker', 0, ['device_authorization', 'device_token_issuance']],
      ['RS256, 1,000 stored grants', 1000, ['device_token_issuance']],
      ['RS256, 2 workers, unpinned', 0, ['device_authorization', 'device_token_issuance']],
    ]);
    for (const run of report.runs) expectOnlyExpectedAnswers(run.scenarios, run.label);
    // The peers answered what Latchkey answered, the same way.
    const peers = report.runs[0]?.peers ?? [];
    expect(peers.map((p) => [p.peer, p.scenarios.map((s) => s.scenario)])).toEqual([
      ['oidc-provider', ['device_authorization', 'device_token_issuance']],
      ['fastify', ['device_authorization']],
    ]);
    for (const peer of peers) expectOnlyExpectedAnswers(peer.scenarios, peer.peer);
    expect(report.comparisons.map((c) => c.scenario)).toEqual(['device_authorization', 'device_token_issuance']);
    for (const c of report.comparisons) expect(c.overOidcProvider).toBeCloseTo(c.latchkey / c.oidcProvider!, 6);
    expect(report.comparisons[0]?.ofFastify).toBeCloseTo(report.comparisons[0]!.latchkey / report.comparisons[0]!.fastify!, 6);
    expect(report.targets.map((t) => t.target)).toEqual(
      expect.arrayContaining([expect.stringContaining('≥ 3x oidc-provider'), expect.stringContaining('of bare Fastify')]),
    );
    expect(stdout).toContain('Side by side');
  }, 300_000);

  it('--baseline measures an older checkout (its seeding code in dist/bench/) beside this one, in rounds, and reports the speed-up', () => {
    // This build is its own baseline here, laid out as last week's main: the point is that the
    // older layout is found and both are driven alike and compared.
    const older = olderLayoutCheckout();
    try {
      const { report, stdout } = bench(['--baseline', older, '--alg', 'RS256', '--workers', '', '--scales', '', '--scenarios', 'device_token_issuance']);
      const run = report.runs[0];
      expect(run?.baseline?.map((s) => s.scenario)).toEqual(['device_token_issuance']);
      for (const figures of run?.baseline ?? []) expectOnlyExpectedAnswers([figures], 'baseline');
      expect(report.againstBaseline?.map((c) => [c.run, c.scenario])).toEqual([['RS256, 1 worker', 'device_token_issuance']]);
      for (const c of report.againstBaseline ?? []) expect(c.speedup).toBeCloseTo(c.latchkey / c.baseline, 6);
      // The issuance target is a ratio to the raw signing rate measured around that scenario.
      expect(run?.signingRateAtIssuance).toBeGreaterThan(0);
      expect(stdout).toContain('Against the baseline build');
    } finally {
      rmSync(older, { recursive: true, force: true });
    }
  }, 300_000);
});
