#!/usr/bin/env node
/**
 * The `latchkey` executable: finds the subcommand, parses its options, runs it, and turns
 * every failure into one line on stderr and a documented exit code. Data goes to stdout,
 * messages to stderr.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Config } from '../config.js';
import { errorMessage } from '../errors.js';
import type { SecretBox } from '../crypto/secret_box.js';
import type { Store } from '../store/store.js';
import { CommandError, exitCodes, serverVariable, type CommandIo, type ParsedCommand } from './command.js';
import { commandIndex, type CommandEntry } from './command_index.js';
import { localOnlyReasons } from './local_only_commands.js';
import { suggestCommands } from './suggest.js';
import { visible } from './terminal_text.js';
import { commandGroups, commandUsage, globalUsage, groupUsage } from './usage.js';
import { latchkeyVersion } from '../version.js';

export const configExitCode = 3;

function findCommand(args: string[]): { entry: CommandEntry; rest: string[] } | undefined {
  const words = args.filter((a) => !a.startsWith('-'));
  const matches = commandIndex.filter((c) => c.path.every((word, i) => words[i] === word)).sort((a, b) => b.path.length - a.path.length);
  const entry = matches[0];
  if (!entry) return undefined;
  const rest = [...args];
  for (const word of entry.path) rest.splice(rest.indexOf(word), 1);
  return { entry, rest };
}

/** "unknown command", with the commands it most likely meant, and the help of the group it names if any. */
function unknownCommand(words: string[]): string {
  const typed = words.slice(0, 2).join(' ');
  const suggestions = suggestCommands(words, commandIndex);
  const meant = suggestions.length > 0 ? ` Did you mean ${suggestions.map((s) => `"latchkey ${s}"`).join(' or ')}?` : '';
  const group = words[0] !== undefined && commandGroups().includes(words[0]) ? words[0] : undefined;
  return `latchkey: unknown command "${visible(typed)}".${meant}\n\n${group ? groupUsage(group) : globalUsage()}`;
}

/**
 * `--server URL` (or `--server=URL`), anywhere on the line: taken out of the arguments and put
 * in LATCHKEY_SERVER for the command (management_client.ts). Undefined when it has no value.
 */
function takeServerOption(args: string[], io: CommandIo): { args: string[]; io: CommandIo } | undefined {
  const rest: string[] = [];
  let server: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (arg === '--server') {
      server = args[i + 1];
      if (server === undefined || server.startsWith('-')) return undefined;
      i++;
    } else if (arg.startsWith('--server=')) server = arg.slice('--server='.length);
    else rest.push(arg);
  }
  return server === undefined ? { args, io } : { args: rest, io: { ...io, env: { ...io.env, [serverVariable]: server } } };
}

export async function main(commandLine: string[], given: CommandIo): Promise<number> {
  const withServer = takeServerOption(commandLine, given);
  if (!withServer) {
    given.stderr.write("latchkey: --server needs the server's URL, e.g. --server https://login.example.com\n");
    return exitCodes.usage;
  }
  const { args, io } = withServer;
  if (args[0] === '--version' || args[0] === '-V') {
    io.stdout.write(`latchkey ${latchkeyVersion}\n`);
    return exitCodes.ok;
  }
  // `latchkey help users add` is `latchkey users add --help`.
  if (args[0] === 'help' && args.length > 1) return main([...args.slice(1), '--help'], io);
  const wantsHelp = args.includes('--help') || args.includes('-h');
  if (args.length === 0 || args[0] === 'help' || (wantsHelp && args.every((a) => a.startsWith('-')))) {
    (args.length === 0 ? io.stderr : io.stdout).write(globalUsage());
    return args.length === 0 ? exitCodes.usage : exitCodes.ok;
  }
  const found = findCommand(args);
  if (!found) {
    const words = args.filter((a) => !a.startsWith('-'));
    const [group] = words;
    // A group's name alone: its commands (asked for with --help, or a command is missing).
    if (words.length === 1 && group !== undefined && commandGroups().includes(group)) {
      if (wantsHelp) io.stdout.write(groupUsage(group));
      else io.stderr.write(`latchkey: which ${group} command?\n\n${groupUsage(group)}`);
      return wantsHelp ? exitCodes.ok : exitCodes.usage;
    }
    io.stderr.write(unknownCommand(words));
    return exitCodes.usage;
  }
  const { entry, rest } = found;
  const command = await entry.load();
  if (wantsHelp) {
    io.stdout.write(commandUsage(entry, command));
    return exitCodes.ok;
  }
  // An admin command that cannot work through the API must not quietly open a local database instead.
  const server = io.env[serverVariable]?.trim();
  if (server && !entry.client && !command.remote) {
    const reason = localOnlyReasons[entry.path.join(' ')];
    io.stderr.write(
      reason === undefined
        ? `latchkey: "latchkey ${entry.path.join(' ')}" does not work with --server (or ${serverVariable}) yet: run it where the database is (LATCHKEY_DB)\n`
        : `latchkey: "latchkey ${entry.path.join(' ')}" does not work with --server (or ${serverVariable}): ${reason}. Run it on the server's machine, without --server\n`,
    );
    return exitCodes.usage;
  }

  let parsed: ParsedCommand;
  try {
    parsed = command.parse(rest);
  } catch (err) {
    io.stderr.write(`latchkey: ${(err as Error).message}\n\nUsage: ${command.usage}\n`);
    return exitCodes.usage;
  }
  const { min, max } = command.positionals;
  if (parsed.positionals.length < min || parsed.positionals.length > max) {
    io.stderr.write(`latchkey: wrong number of arguments\n\nUsage: ${command.usage}\n`);
    return exitCodes.usage;
  }

  // What only the server's commands need is loaded when asked for (see command_index.ts); the
  // configuration module is loaded before the command runs, so config() stays synchronous.
  const { loadServerConfig } = await import('../config_file/read_server_settings.js');
  let config: Config | undefined;
  let opened: Promise<{ store: Store; box: SecretBox | undefined }> | undefined;
  // Every command that opens the database first does what the server does at start: checks that
  // the configured secret key belongs to it — a command run with a wrong key file must change
  // nothing, since a secret sealed under a key the server does not have would lock the server out
  // of its own database — and seals what a version before encryption left in the clear (else a
  // value this command seals would make those look like a later hand edit). What it did, an
  // upgrade above all, is said on stderr.
  // A command that only reads opens an existing SQLite file for reading (no migration, no key
  // file, nothing sealed), so that it works where the file cannot be written; it needs no key.
  const openStore = async (c: Config): Promise<{ store: Store; box: SecretBox | undefined }> => {
    const store = await (await import('../store/open.js')).openConfiguredStore(c, { readOnly: command.readOnly });
    if (store.readOnly === true) return { store, box: undefined };
    try {
      const prepared = await (await import('../prepare_database.js')).prepareDatabase(c, store, { refuseClearValues: false });
      for (const notice of prepared.notices) io.stderr.write(`${notice}\n`);
      return { store, box: prepared.secretBox };
    } catch (err) {
      await store.close();
      throw err;
    }
  };
  // Opening the store opens (and checks) the box.
  // A command's `--config FILE` counts for the store it opens too, whichever it asks for first.
  const configure = () => (config ??= loadServerConfig(io.env, parsed.configFile));
  const open = () => (opened ??= openStore(configure()));
  try {
    return await parsed.run({
      ...io,
      config: configure,
      store: async () => (await open()).store,
      secretBox: async () => {
        const { box } = await open();
        if (box === undefined) throw new Error('a command that only reads the database has no secret key');
        return box;
      },
    });
  } catch (err) {
    const [{ ConfigError }, { SecretKeyError }, { AdminInputError }, { ManagedObjectError }] = await Promise.all([
      import('../config.js'),
      import('../crypto/secret_box.js'),
      import('../directory/validation.js'),
      import('../directory/managed.js'),
    ]);
    if (err instanceof ConfigError) {
      for (const problem of err.problems) io.stderr.write(`latchkey: ${visible(problem)}\n`);
      return configExitCode;
    }
    if (err instanceof SecretKeyError) {
      io.stderr.write(`latchkey: LATCHKEY_SECRET_KEY: ${visible(err.message)}\n`);
      return configExitCode;
    }
    // Not a mistake in the command: the object is declared in a configuration file.
    if (err instanceof ManagedObjectError) {
      io.stderr.write(`latchkey: ${visible(err.message)}\n`);
      return exitCodes.failure;
    }
    // Messages may quote stored or typed values: their control characters are shown, not run.
    if (err instanceof AdminInputError) {
      io.stderr.write(`latchkey: ${visible(err.message)}\n`);
      return exitCodes.usage;
    }
    if (err instanceof CommandError) {
      io.stderr.write(`latchkey: ${visible(err.message)}\n`);
      return err.exitCode;
    }
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      io.stderr.write(`latchkey: PORT/HOST: cannot listen: ${visible((err as Error).message)}\n`);
      return exitCodes.failure;
    }
    io.stderr.write(`latchkey: unexpected error: ${visible(errorMessage(err))}\n`);
    return exitCodes.failure;
  } finally {
    // A store that failed to open has nothing to close (its error was reported above).
    const done = await opened?.catch(() => undefined);
    await done?.store.close();
  }
}

function isEntryPoint(): boolean {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env }).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`latchkey: unexpected error: ${visible(errorMessage(err))}\n`);
      process.exitCode = 1;
    },
  );
}
