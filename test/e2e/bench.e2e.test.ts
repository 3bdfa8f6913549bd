/**
 * `npm run bench` in its quick form, as CI runs it on a clean clone: every scenario drives the
 * built server over a real socket and gets only the answers it expects (200s, or
 * authorization_pending for the pending polls: never slow_down, never a spent code), and the
 * report ends in one JSON line. Speed is not asserted here: the figures live in the README.
 */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const benchMain = fileURLToPath(new URL('../../dist/bench/main.js', import.meta.url));

describe('npm run bench (quick)', () => {
  it('runs every scenario, the store scales and two workers, and prints the table and one JSON line', () => {
    const run = spawnSync(process.execPath, [benchMain, '--quick', '--alg', 'ES256', '--workers', '2', '--scales', '1000,20000'], {
      encoding: 'utf8',
      timeout: 240_000,
    });
    expect(run.status, run.stderr).toBe(0);
    const lines = run.stdout.trim().split('\n');
    const report = JSON.parse(lines[lines.length - 1] ?? '') as {
      signingRates: Record<string, number>;
      runs: { label: string; storedDeviceGrants: number; scenarios: { scenario: string; requestsPerSecond: number; unexpected: number; answers: Record<string, number> }[] }[];
      targets: { target: string; met: boolean }[];
    };
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
    ]);
    for (const run of report.runs) {
      for (const scenario of run.scenarios) {
        expect({ run: run.label, scenario: scenario.scenario, unexpected: scenario.unexpected, answers: scenario.answers }).toMatchObject({ unexpected: 0 });
        expect(scenario.requestsPerSecond).toBeGreaterThan(0);
      }
    }
    expect(report.runs[0]?.scenarios[1]?.answers['error:authorization_pending']).toBeGreaterThan(0);
    expect(report.targets.length).toBeGreaterThan(5);
    expect(run.stdout).toContain('device_token_issuance');
    expect(run.stdout).toContain('Targets');
  }, 300_000);
});
