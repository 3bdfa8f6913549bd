/**
 * What `latchkey --help`, `latchkey <group> --help` and `latchkey <command> --help` print: the
 * commands of the index (command_index.ts) — all of them, those of one group (`users`,
 * `clients`…), or one command's usage and options.
 */
import type { Command, CommandEntry } from './command.js';
import { commandIndex } from './command_index.js';

const exitCodesText = [
  'Exit codes: 0 success, 1 failure, 2 usage error, 3 bad configuration, 4 sign-in denied,',
  '            5 code expired or sign-in timed out, 6 not signed in (run latchkey login), 130 interrupted.',
];

function lines(entries: readonly CommandEntry[], width: number): string[] {
  return entries.map((c) => `  ${c.path.join(' ').padEnd(width)}  ${c.summary}`);
}

const widest = (entries: readonly CommandEntry[]) => Math.max(...entries.map((c) => c.path.join(' ').length));

export function globalUsage(): string {
  const width = widest(commandIndex);
  return [
    'latchkey — an OAuth 2.0 / OpenID Connect identity provider for CLIs, devices and browsers',
    '',
    'Usage: latchkey <command> [options]',
    '',
    'Sign in from this machine:',
    ...lines(
      commandIndex.filter((c) => c.client),
      width,
    ),
    '',
    'Run and administer the server, also while it runs (on LATCHKEY_DB: a SQLite file, default ./data/latchkey.db,',
    'or a postgres:// URL):',
    ...lines(
      commandIndex.filter((c) => !c.client),
      width,
    ),
    '',
    'Run "latchkey <command> --help" for the options of a command, "latchkey <group> --help" for a group',
    '(e.g. latchkey users --help), "latchkey --version" for the version.',
    '',
    ...exitCodesText,
    '',
  ].join('\n');
}

/** The groups: first words shared by several commands' paths (users, clients, credential…). */
export function commandGroups(): string[] {
  return [...new Set(commandIndex.flatMap((c) => (c.path.length > 1 && c.path[0] !== undefined ? [c.path[0]] : [])))];
}

export function groupUsage(group: string): string {
  const entries = commandIndex.filter((c) => c.path.length > 1 && c.path[0] === group);
  return [
    `Usage: latchkey ${group} <command> [options]`,
    '',
    ...lines(entries, widest(entries)),
    '',
    `Run "latchkey ${group} <command> --help" for the options of a command, "latchkey --help" for every command.`,
    '',
  ].join('\n');
}

export function commandUsage(entry: CommandEntry, command: Command): string {
  return `${entry.summary}\n\nUsage: ${command.usage}\n${command.help ? `\n${command.help.trimEnd()}\n` : ''}`;
}
