/**
 * A server under test: the built `latchkey serve` — or a peer (peer_oidc_provider.js,
 * peer_bare_fastify.js) — in its own process (pinned to one core where taskset exists), with its
 * CPU time and peak RSS read from /proc for it and its cluster workers.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// dist-bench/src is the server's build (dist/): see bench/tsconfig.json.
const cliPath = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
const clockTicksPerSecond = 100;

export const hasTaskset = spawnSync('taskset', ['-c', '0', 'true']).status === 0;

/** `taskset -c <cores>` in front of a command, when taskset exists. */
export function pinned(cores: string | undefined, command: string[]): string[] {
  return cores !== undefined && hasTaskset ? ['taskset', '-c', cores, ...command] : command;
}

function childrenOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((tid) => readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number));
  } catch {
    return [];
  }
}

/** The process and all its descendants (cluster workers). */
function processTree(pid: number): number[] {
  return [pid, ...childrenOf(pid).flatMap(processTree)];
}

function cpuSecondsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime: fields 14 and 15 of stat(5), 12 and 13 after the command name.
    return (Number(fields[11]) + Number(fields[12])) / clockTicksPerSecond;
  } catch {
    return 0;
  }
}

function peakRssOf(pid: number): number {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

export interface BenchServer {
  url: string;
  /** Several instances measured as one (PostgreSQL): each one's address. */
  urls?: string[];
  /** CPU seconds used so far by the server and its workers. */
  cpuSeconds(): number;
  /** Sum over the server's processes of each one's peak RSS since the last reset. */
  peakRssBytes(): number;
  resetPeakRss(): void;
  processCount(): number;
  /** The server's (primary) process id. */
  pid(): number;
  stop(): Promise<void>;
}

export interface StartOptions {
  env: Record<string, string>;
  port: number;
  cores: string | undefined;
  logPath: string;
  /** What node runs: `latchkey serve` by default, or a peer's script and its arguments. */
  script?: string[];
  /** Answers 200 once the server is ready. */
  readyPath?: string;
  /** Seconds to wait for it (seeding a peer takes a while). */
  readyTimeout?: number;
}

export async function startBenchServer(options: StartOptions): Promise<BenchServer> {
  const log = openSync(options.logPath, 'a');
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const [command, ...args] = pinned(options.cores, [process.execPath, ...nodeArgs, ...(options.script ?? [cliPath, 'serve'])]);
  const child: ChildProcess = spawn(command ?? process.execPath, args, {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...options.env },
    stdio: ['ignore', log, log],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // Whatever happens to the bench, its server (and a cluster's workers, which follow the primary's
  // SIGTERM) does not outlive it.
  const stopChild = () => child.exitCode === null && child.kill('SIGTERM');
  process.once('exit', stopChild);
  const url = `http://127.0.0.1:${options.port}`;
  const deadline = Date.now() + (options.readyTimeout ?? 30) * 1000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited with code ${child.exitCode}; see ${options.logPath}`);
    try {
      if ((await fetch(`${url}${options.readyPath ?? '/readyz'}`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      stopChild();
      await exited;
      throw new Error(`the server did not become ready; see ${options.logPath}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const pid = child.pid ?? 0;
  return {
    url,
    cpuSeconds: () => processTree(pid).reduce((sum, p) => sum + cpuSecondsOf(p), 0),
    peakRssBytes: () => processTree(pid).reduce((sum, p) => sum + peakRssOf(p), 0),
    resetPeakRss: () => {
      for (const p of processTree(pid)) {
        try {
          // "5" resets the peak RSS (VmHWM) to the current RSS (proc(5), clear_refs).
          writeFileSync(`/proc/${p}/clear_refs`, '5');
        } catch {
          // not permitted here: the peak then covers the whole life of the process
        }
      }
    },
    processCount: () => processTree(pid).length,
    pid: () => pid,
    async stop() {
      stopChild();
      await exited;
      process.off('exit', stopChild);
    },
  };
}
