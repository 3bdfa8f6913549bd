/**
 * Finding one's way around the `latchkey` executable, run as a person would: --version, a group's
 * help, "did you mean" for a mistyped command, and shell completion scripts sourced into real
 * shells (bash always; zsh and fish where installed, which .ci/run makes sure of).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/process.js';

const version = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const env = { HOME: tmpdir() };
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-usage-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('latchkey --version', () => {
  it('prints "latchkey <version>" from package.json, also as -V', async () => {
    for (const flag of ['--version', '-V']) {
      const res = await runCli([flag], env);
      expect(res.code).toBe(0);
      expect(res.stdout).toBe(`latchkey ${version}\n`);
      expect(res.stderr).toBe('');
    }
  });
});

describe('a group of commands', () => {
  it('latchkey users --help lists the users commands only, on stdout, exit 0', async () => {
    const res = await runCli(['users', '--help'], env);
    expect(res.code).toBe(0);
    expect(res.stdout.split('\n')[0]).toBe('Usage: latchkey users <command> [options]');
    const listed = res.stdout.split('\n').filter((line) => line.startsWith('  '));
    expect(listed.length).toBeGreaterThan(5);
    for (const line of listed) expect(line).toMatch(/^ {2}users [a-z-]+ +\S/);
    expect(res.stdout).toMatch(/^ {2}users add +Create a user$/m);
    expect(res.stdout).not.toContain('clients add');
    expect(res.stdout).not.toContain('login');
  });

  it('latchkey users alone asks which command (exit 2) and lists them on stderr; latchkey help users is the help', async () => {
    const res = await runCli(['users'], env);
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/^latchkey: which users command\?\n\nUsage: latchkey users <command> \[options\]\n/);
    expect(res.stderr).not.toContain('clients add');
    const help = await runCli(['help', 'users'], env);
    expect(help.code).toBe(0);
    expect(help.stdout).toBe((await runCli(['users', '--help'], env)).stdout);
  });
});

describe('a mistyped command', () => {
  it.each([
    [['user', 'list'], 'latchkey users list'],
    [['logn'], 'latchkey login'],
    [['users', 'lst'], 'latchkey users list'],
    [['staus', '--json'], 'latchkey status'],
  ])('latchkey %j → did you mean "%s"?', async (args, meant) => {
    const res = await runCli(args, env);
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr.split('\n')[0]).toBe(`latchkey: unknown command "${args.filter((a) => !a.startsWith('-')).join(' ')}". Did you mean "${meant}"?`);
  });

  it('something like no command gets no suggestion, and the full help', async () => {
    const res = await runCli(['frobnicate'], env);
    expect(res.code).toBe(2);
    expect(res.stderr.split('\n')[0]).toBe('latchkey: unknown command "frobnicate".');
    expect(res.stderr).toContain('Sign in from this machine:');
  });
});

/** The script for `shell`, written to a file as a person would save it. */
async function script(shell: string): Promise<string> {
  const res = await runCli(['completion', shell], env);
  expect(res.code).toBe(0);
  expect(res.stderr).toBe('');
  const path = join(dir, `latchkey.${shell}`);
  writeFileSync(path, res.stdout);
  return path;
}

const has = (shell: string) => spawnSync('sh', ['-c', `command -v ${shell}`]).status === 0;

describe('latchkey completion', () => {
  it('bash: sourced by bash, completes commands, groups, options, and leaves option values alone', async () => {
    const path = await script('bash');
    // COMP_WORDS / COMP_CWORD as bash sets them on Tab, then the completion function's answer.
    const complete = (...words: string[]) =>
      execFileSync(
        'bash',
        [
          '--noprofile',
          '--norc',
          '-c',
          'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _latchkey; printf "%s\\n" "${COMPREPLY[@]}"',
          'complete',
          path,
          ...words,
        ],
        { encoding: 'utf8' },
      )
        .split('\n')
        .filter(Boolean);
    expect(execFileSync('bash', ['--noprofile', '--norc', '-c', 'source "$1"; complete -p latchkey', 'check', path], { encoding: 'utf8' })).toBe(
      'complete -F _latchkey latchkey\n',
    );
    expect(complete('latchkey', 'us')).toEqual(['users']);
    expect(complete('latchkey', 'st')).toEqual(['status']);
    expect(complete('latchkey', '--v')).toEqual(['--version']);
    expect(complete('latchkey', 'users', '')).toEqual(expect.arrayContaining(['add', 'list', 'disable', '--help']));
    expect(complete('latchkey', 'users', '')).not.toContain('login');
    expect(complete('latchkey', 'users', 'a')).toEqual(['add']);
    expect(complete('latchkey', 'login', '--pro')).toEqual(['--profile']);
    expect(complete('latchkey', 'login', '--profile', 'work', '--d')).toEqual(['--device', '--dpop']);
    expect(complete('latchkey', 'login', '--profile', '')).toEqual([]);
    expect(complete('latchkey', 'credential', 'git', '--ho')).toEqual(['--host']);
    expect(complete('latchkey', 'status', '--')).toEqual(['--json', '--help']);
    expect(complete('latchkey', 'completion', '')).toEqual(['bash', 'zsh', 'fish', '--help']);
  });

  it('the scripts hold no value from the credentials file or the environment', async () => {
    const secretEnv = { HOME: dir, LATCHKEY_HOME: join(dir, 'lk'), LATCHKEY_ISSUER: 'https://secret-issuer.example', LATCHKEY_SECRET_KEY: 'k'.repeat(43) };
    for (const shell of ['bash', 'zsh', 'fish']) {
      const res = await runCli(['completion', shell], secretEnv);
      expect(res.code).toBe(0);
      expect(res.stdout).not.toContain('secret-issuer');
      expect(res.stdout).not.toContain('k'.repeat(43));
      expect(res.stdout).not.toContain(dir);
    }
  });

  it('an unknown shell is a usage error', async () => {
    const res = await runCli(['completion', 'tcsh'], env);
    expect(res.code).toBe(2);
    expect(res.stderr).toBe('latchkey: no completion for "tcsh": say bash, zsh or fish\n');
  });

  it.runIf(has('zsh') || process.env.LATCHKEY_REQUIRE_SHELLS === '1')('zsh: the script parses, and completes groups and options', async () => {
    const path = await script('zsh');
    execFileSync('zsh', ['-n', path]);
    // Outside a completion widget, _describe and compadd are stand-ins that print what they are given.
    const complete = (...words: string[]) =>
      execFileSync(
        'zsh',
        [
          '-f',
          '-c',
          'source "$1"; shift; compadd() { shift; print -rl -- "$@"; }; _describe() { local name=$4; print -rl -- ${${(P)name}%%:*}; }; words=("$@"); CURRENT=$#; _latchkey',
          'complete',
          path,
          ...words,
        ],
        { encoding: 'utf8' },
      )
        .split('\n')
        .filter(Boolean);
    expect(complete('latchkey', 'users', '')).toEqual(expect.arrayContaining(['add', 'list', '--help']));
    expect(complete('latchkey', 'users', '')).not.toContain('login');
    expect(complete('latchkey', 'login', '--profile', 'x', '')).toEqual(expect.arrayContaining(['--issuer', '--device', '--profile']));
    expect(complete('latchkey', '')).toEqual(expect.arrayContaining(['login', 'status', 'users', '--version']));
    // Saved as _latchkey in a folder of $fpath, as the help says: zsh autoloads it on first use.
    const folder = join(dir, 'zsh-functions');
    mkdirSync(folder, { recursive: true });
    copyFileSync(path, join(folder, '_latchkey'));
    const autoloaded = execFileSync(
      'zsh',
      [
        '-f',
        '-c',
        'fpath=("$1" $fpath); autoload -Uz _latchkey; compadd() { shift; print -rl -- "$@"; }; _describe() { local name=$4; print -rl -- ${${(P)name}%%:*}; }; words=(latchkey users ""); CURRENT=3; _latchkey',
        'complete',
        folder,
      ],
      { encoding: 'utf8' },
    );
    expect(autoloaded.split('\n')).toEqual(expect.arrayContaining(['add', 'list', '--help']));
  });

  it.runIf(has('fish') || process.env.LATCHKEY_REQUIRE_SHELLS === '1')('fish: the script parses, and complete -C answers from it', async () => {
    const path = await script('fish');
    execFileSync('fish', ['--no-config', '-n', path]);
    const complete = (line: string) =>
      execFileSync('fish', ['--no-config', '-c', `source ${path}; complete -C${JSON.stringify(line)}`], { encoding: 'utf8' })
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split('\t')[0]);
    expect(complete('latchkey us')).toEqual(['users']);
    expect(complete('latchkey users ')).toEqual(expect.arrayContaining(['add', 'list', 'disable']));
    expect(complete('latchkey login --pr')).toEqual(['--profile']);
    expect(complete('latchkey completion ')).toEqual(expect.arrayContaining(['bash', 'zsh', 'fish']));
  });
});
