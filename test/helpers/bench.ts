/** Running the built bench (dist-bench/bench/main.js, npm run build:bench) from the e2e tests, and what its JSON line holds. */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';

const benchMain = fileURLToPath(new URL('../../dist-bench/bench/main.js', import.meta.url));

export interface Report {
  signingRates: Record<string, number>;
  runs: {
    label: string;
    database: string;
    instances: number;
    storedDeviceGrants: number;
    scenarios: Scenario[];
    peers?: { peer: string; scenarios: Scenario[] }[];
    baseline?: Scenario[];
    signingRateAtIssuance?: number;
    passwordRateAtSignIn?: number;
    passwordCpuRateAtSignIn?: number;
    passwordRateAtTotpSignIn?: number;
    passwordCpuRateAtTotpSignIn?: number;
    measuredAlongside?: string;
  }[];
  signIns: {
    run: string;
    scenario: string;
    signInsPerSecond: number;
    passwordVerificationsPerSecond: number;
    ofPasswordRate: number;
    cpuMicrosecondsPerSignIn: number;
    signInsPerCpuSecond: number;
    passwordVerificationsPerCpuSecond: number;
    ofPasswordCpuRate: number;
  }[];
  comparisons: { scenario: string; latchkey: number; oidcProvider?: number; fastify?: number; overOidcProvider?: number; ofFastify?: number }[];
  againstBaseline?: { run: string; scenario: string; latchkey: number; baseline: number; speedup: number; cpuRatio: number }[];
  targets: { target: string; value: string; met: boolean }[];
}
export interface Scenario {
  scenario: string;
  requestsPerSecond: number;
  unexpected: number;
  answers: Record<string, number>;
}

export function bench(args: string[]): { report: Report; stdout: string } {
  const run = spawnSync(process.execPath, [benchMain, '--quick', ...args], { encoding: 'utf8', timeout: 280_000 });
  expect(run.status, run.stderr).toBe(0);
  const lines = run.stdout.trim().split('\n');
  return { report: JSON.parse(lines[lines.length - 1] ?? '') as Report, stdout: run.stdout };
}

export function expectOnlyExpectedAnswers(scenarios: Scenario[], label: string) {
  for (const scenario of scenarios) {
    expect({ run: label, scenario: scenario.scenario, unexpected: scenario.unexpected, answers: scenario.answers }).toMatchObject({ unexpected: 0 });
    expect(scenario.requestsPerSecond).toBeGreaterThan(0);
  }
}
