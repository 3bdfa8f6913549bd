/** Runs the built `latchkey` executable as a person would: a child process with its own env. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';

export const executable = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(args: string[], env: Record<string, string>, input?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [executable, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer | string) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer | string) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

/**
 * Runs `latchkey <args>` through the executable's entry point, main(), in this process: for tests
 * about what a command says and does rather than about the process (each process start costs about
 * half a second of CPU, and twenty in a row ran past a test's limit on a busy machine). The same
 * arguments, environment and standard input as runCli; the exit code is main's.
 */
export async function runMain(args: string[], env: Record<string, string>, input?: string): Promise<CliResult> {
  const { main } = await import('../../src/cli/main.js');
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const stdin = new PassThrough();
  stdin.end(input ?? '');
  let out = '';
  let err = '';
  stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const code = await main(args, { stdout, stderr, stdin, env: { PATH: process.env.PATH ?? '', ...env } });
  return { code, stdout: out, stderr: err };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface ServerProcess {
  child: ChildProcess;
  base: string;
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `latchkey serve` (with `args`, e.g. `--config FILE`) and resolves once it says it is listening. */
export async function startServerProcess(env: Record<string, string>, args: string[] = []): Promise<ServerProcess> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [executable, 'serve', ...args], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port), LATCHKEY_ISSUER: base, LATCHKEY_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 15_000);
    const onData = (d: Buffer) => {
      output += d.toString();
      if (output.includes('Latchkey is listening')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output}`));
    });
  });
  return {
    child,
    base,
    output: () => output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

export interface RunningCli {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first match of `pattern` in stderr. */
  waitForStderr(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  exit: Promise<number | null>;
}

/** Starts the executable and lets the test talk to it while it runs (login waits for a person). */
export function spawnCli(args: string[], env: Record<string, string>): RunningCli {
  const child = spawn(process.execPath, [executable, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer | string) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer | string) => (err += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.on('close', (code, signal) => resolve(code ?? (signal ? 128 : null))));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exit,
    waitForStderr(pattern, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const started = Date.now();
        const check = () => {
          const match = err.match(pattern);
          if (match) {
            resolve(match);
            return;
          }
          if (Date.now() - started > timeoutMs || child.exitCode !== null) {
            reject(new Error(`no ${pattern} in stderr:\n${err}`));
            return;
          }
          setTimeout(check, 25);
        };
        check();
      });
    },
  };
}
