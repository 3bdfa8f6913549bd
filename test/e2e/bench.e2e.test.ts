/**
 * `npm run bench` in its quick form, as CI runs it on a clean clone: every scenario drives the
 * built server over a real socket and gets only the answers it expects (200s, or
 * authorization_pending for the pending polls: never slow_down, never a spent code), the peers
 * (oidc-provider, bare Fastify) answer the device flow's scenarios beside it, and the report ends
 * in one JSON line with the ratios (bench_postgres.e2e.test.ts: the same on PostgreSQL). Speed is
 * not asserted here: the figures live in the README.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { bench, expectOnlyExpectedAnswers } from '../helpers/bench.js';

describe('npm run bench (quick)', () => {
  it('runs every scenario (browser sign-ins too), the store scales and two workers, side by side with oidc-provider and bare Fastify, and prints the table and one JSON line', () => {
    const { report, stdout } = bench(['--peer', '--alg', 'ES256', '--workers', '2', '--scales', '1000,20000']);
    expect(report.signingRates.ES256).toBeGreaterThan(0);
    expect(report.signingRates.RS256).toBeGreaterThan(0);
    expect(report.runs.map((r) => r.label)).toEqual(['ES256, 1 worker', 'ES256, 1,000 stored grants', 'ES256, 20,000 stored grants', 'ES256, 2 workers, unpinned']);
    expect(report.runs[0]?.scenarios.map((s) => s.scenario)).toEqual([
      'device_authorization',
      'device_poll_pending',
      'device_token_issuance',
      'code_exchange',
      'refresh',
      'userinfo',
      'jwks',
      'browser_sign_in',
    ]);
    for (const run of report.runs) expectOnlyExpectedAnswers(run.scenarios, run.label);
    expect(report.runs[0]?.scenarios[1]?.answers['error:authorization_pending']).toBeGreaterThan(0);
    // Whole sign-ins through the pages, each ending in a token response, beside the raw password rate of the same core.
    expect(report.runs[0]?.scenarios[7]?.answers['200']).toBeGreaterThan(0);
    expect(report.signIns.map((s) => s.run)).toEqual(['ES256, 1 worker']);
    const signIns = report.signIns[0]!;
    expect(signIns.passwordVerificationsPerSecond).toBe(report.runs[0]?.passwordRateAtSignIn);
    expect(signIns.ofPasswordRate).toBeCloseTo(signIns.signInsPerSecond / signIns.passwordVerificationsPerSecond, 6);
    expect(signIns.ofPasswordCpuRate).toBeCloseTo(1e6 / signIns.cpuMicrosecondsPerSignIn / signIns.passwordVerificationsPerCpuSecond, 6);
    expect(stdout).toContain('Browser sign-ins');
    // The peers answered what Latchkey answered, the same way (a pending poll is authorization_pending there too).
    const peers = report.runs[0]?.peers ?? [];
    expect(peers.map((p) => [p.peer, p.scenarios.map((s) => s.scenario)])).toEqual([
      ['oidc-provider', ['device_authorization', 'device_poll_pending', 'device_token_issuance']],
      ['fastify', ['device_authorization', 'device_poll_pending']],
    ]);
    for (const peer of peers) expectOnlyExpectedAnswers(peer.scenarios, peer.peer);
    expect(report.comparisons.map((c) => c.scenario)).toEqual(['device_authorization', 'device_poll_pending', 'device_token_issuance']);
    for (const c of report.comparisons) expect(c.overOidcProvider).toBeCloseTo(c.latchkey / c.oidcProvider!, 6);
    expect(report.comparisons[0]?.ofFastify).toBeCloseTo(report.comparisons[0]!.latchkey / report.comparisons[0]!.fastify!, 6);
    expect(report.targets.map((t) => t.target)).toEqual(
      expect.arrayContaining([expect.stringContaining('≥ 3x oidc-provider'), expect.stringContaining('of bare Fastify'), expect.stringContaining('of the raw signing rate')]),
    );
    expect(stdout).toContain('Side by side');
    expect(stdout).toContain('Targets');
  }, 300_000);

  it('--baseline measures another build beside this one, in rounds, and reports the speed-up per scenario', () => {
    // This checkout is its own baseline here: the point is that both are driven alike and compared.
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const { report, stdout } = bench(['--baseline', root, '--alg', 'ES256', '--workers', '', '--scales', '', '--scenarios', 'device_authorization,device_token_issuance']);
    const run = report.runs[0];
    expect(run?.baseline?.map((s) => s.scenario)).toEqual(['device_authorization', 'device_token_issuance']);
    for (const figures of run?.baseline ?? []) expectOnlyExpectedAnswers([figures], 'baseline');
    expect(report.againstBaseline?.map((c) => [c.run, c.scenario])).toEqual([
      ['ES256, 1 worker', 'device_authorization'],
      ['ES256, 1 worker', 'device_token_issuance'],
    ]);
    for (const c of report.againstBaseline ?? []) expect(c.speedup).toBeCloseTo(c.latchkey / c.baseline, 6);
    // The issuance target is a ratio to the raw signing rate measured around that scenario.
    expect(run?.signingRateAtIssuance).toBeGreaterThan(0);
    expect(stdout).toContain('Against the baseline build');
  }, 300_000);
});
