/** The bench's printed report: a table per run, issuance against the signing rate, and the targets. */
import type { SigningAlgorithm } from '../crypto/keys.js';
import type { ScenarioName } from './scenarios.js';

export interface ScenarioFigures {
  scenario: ScenarioName;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  /** Answers other than the scenario's expected one (for polls: anything but authorization_pending). */
  unexpected: number;
  answers: Record<string, number>;
  /** CPU time of the server's processes per second of the run (1.0 = one core busy). */
  serverCpuCores: number;
  cpuMicrosecondsPerRequest: number;
  peakRssMb: number;
}

export interface RunReport {
  label: string;
  alg: SigningAlgorithm;
  workers: number;
  storedDeviceGrants: number;
  seedSeconds: number;
  scenarios: ScenarioFigures[];
}

export interface BenchReport {
  date: string;
  machine: { cpu: string; cores: number; memoryGb: number; node: string; pinned: boolean };
  connections: number;
  durationSeconds: number;
  signingRates: Partial<Record<SigningAlgorithm, number>>;
  runs: RunReport[];
}

export interface TargetCheck {
  target: string;
  value: string;
  met: boolean;
}

const columns = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'unexpected', 'server CPU', 'CPU µs/req', 'peak RSS MB'];

function table(rows: string[][]): string {
  const widths = columns.map((c, i) => Math.max(c.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join('  ');
  return [line(columns), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

const whole = (n: number) => Math.round(n).toLocaleString('en');

function find(report: BenchReport, predicate: (run: RunReport) => boolean, scenario: ScenarioName): ScenarioFigures | undefined {
  return report.runs.find(predicate)?.scenarios.find((s) => s.scenario === scenario);
}

export function checkTargets(report: BenchReport): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const pinnedMain = (run: RunReport) => run.workers === 1 && run.storedDeviceGrants === 0 && !run.label.includes('unpinned');
  const firstAlg = report.runs[0]?.alg;
  const main = (run: RunReport) => pinnedMain(run) && run.alg === firstAlg;
  const authorizations = find(report, main, 'device_authorization');
  if (authorizations) checks.push({ target: 'device authorizations ≥ 9,000/s', value: whole(authorizations.requestsPerSecond), met: authorizations.requestsPerSecond >= 9000 });
  const polls = find(report, main, 'device_poll_pending');
  if (polls) checks.push({ target: 'pending polls ≥ 8,500/s', value: whole(polls.requestsPerSecond), met: polls.requestsPerSecond >= 8500 });
  for (const run of report.runs.filter(pinnedMain)) {
    const issuance = run.scenarios.find((s) => s.scenario === 'device_token_issuance');
    const rate = report.signingRates[run.alg];
    if (issuance && rate) {
      const fraction = issuance.requestsPerSecond / rate;
      checks.push({ target: `${run.alg} issuance ≥ 80% of the raw signing rate (${whole(rate)}/s)`, value: `${whole(issuance.requestsPerSecond)}/s = ${(fraction * 100).toFixed(0)}%`, met: fraction >= 0.8 });
    }
  }
  const pinnedRuns = report.runs.filter((run) => !run.label.includes('unpinned'));
  const slowest = pinnedRuns.flatMap((run) => run.scenarios.map((s) => ({ run, s }))).sort((a, b) => b.s.p99Ms - a.s.p99Ms)[0];
  if (slowest) checks.push({ target: `p99 < 50 ms in every scenario (worst: ${slowest.run.label} ${slowest.s.scenario})`, value: `${slowest.s.p99Ms} ms`, met: slowest.s.p99Ms < 50 });
  const scaled = report.runs.filter((run) => run.storedDeviceGrants > 0).sort((a, b) => a.storedDeviceGrants - b.storedDeviceGrants);
  const smallest = scaled[0];
  const largest = scaled[scaled.length - 1];
  if (smallest && largest && smallest !== largest) {
    for (const scenario of ['device_poll_pending', 'device_token_issuance'] as const) {
      const small = smallest.scenarios.find((s) => s.scenario === scenario);
      const large = largest.scenarios.find((s) => s.scenario === scenario);
      if (!small || !large) continue;
      const ratio = large.requestsPerSecond / small.requestsPerSecond;
      checks.push({
        target: `${scenario} at ${whole(largest.storedDeviceGrants)} stored grants within 15% of ${whole(smallest.storedDeviceGrants)}`,
        value: `${(ratio * 100).toFixed(0)}%`,
        met: ratio >= 0.85,
      });
    }
  }
  const peak = Math.max(0, ...report.runs.filter((run) => run.workers === 1).flatMap((run) => run.scenarios.map((s) => s.peakRssMb)));
  checks.push({ target: 'peak RSS < 200 MB (one worker)', value: `${peak.toFixed(0)} MB`, met: peak < 200 });
  return checks;
}

export function formatReport(report: BenchReport): string {
  const out: string[] = [];
  out.push(`Latchkey bench, ${report.date}`);
  out.push(`Machine: ${report.machine.cpu}, ${report.machine.cores} cores, ${report.machine.memoryGb} GiB, Node ${report.machine.node}`);
  out.push(
    `Server ${report.machine.pinned ? 'pinned to core 0, load generator (autocannon) on core 1' : 'not pinned (no taskset or one core)'}; ` +
      `${report.connections} connections, ${report.durationSeconds} s per scenario after a warm-up.`,
  );
  out.push(`Raw signing rate on one core: ${Object.entries(report.signingRates).map(([alg, rate]) => `${alg} ${whole(rate ?? 0)}/s`).join(', ')}`);
  for (const run of report.runs) {
    out.push('', `${run.label}${run.storedDeviceGrants > 0 ? ` (seeded in ${run.seedSeconds.toFixed(0)} s)` : ''}`);
    out.push(
      table(
        run.scenarios.map((s) => [
          s.scenario,
          whole(s.requestsPerSecond),
          s.p50Ms.toFixed(0),
          s.p99Ms.toFixed(0),
          whole(s.non2xx),
          whole(s.unexpected),
          s.serverCpuCores.toFixed(2),
          s.cpuMicrosecondsPerRequest.toFixed(0),
          s.peakRssMb.toFixed(0),
        ]),
      ),
    );
  }
  out.push('', 'Targets');
  for (const check of checkTargets(report)) out.push(`  ${check.met ? 'met   ' : 'MISSED'}  ${check.target}: ${check.value}`);
  out.push('');
  return out.join('\n') + '\n';
}
