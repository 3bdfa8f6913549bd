#!/usr/bin/env node
/**
 * The `latchkey` executable: finds the subcommand, parses its options, runs it, and turns
 * every failure into one line on stderr and a documented exit code. Data goes to stdout,
 * messages to stderr.
 */
import { parseArgs } from 'node:util';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AdminInputError } from '../admin/validation.js';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { openConfiguredStore } from '../store/open.js';
import { openSecretBox } from '../crypto/secret_key_file.js';
import { SecretKeyError, type SecretBox } from '../crypto/secret_box.js';
import type { Store } from '../store/store.js';
import { CommandError, exitCodes, type Command, type CommandIo } from './command.js';
import { apisAddCommand } from './commands/apis_add.js';
import { apisListCommand } from './commands/apis_list.js';
import { apisRemoveCommand } from './commands/apis_remove.js';
import { apisUpdateCommand } from './commands/apis_update.js';
import { clientsAddCommand } from './commands/clients_add.js';
import { clientsListCommand } from './commands/clients_list.js';
import { clientsRemoveCommand } from './commands/clients_remove.js';
import { clientsGrantCommand } from './commands/clients_grant.js';
import { clientsRotateSecretCommand } from './commands/clients_rotate_secret.js';
import { clientsDisableCommand, clientsEnableCommand } from './commands/clients_disable.js';
import { clientsRegistrationTokenCommand } from './commands/clients_registration_token.js';
import { rolesAddCommand, rolesListCommand, rolesRemoveCommand, rolesUpdateCommand } from './commands/roles.js';
import { usersGrantCommand, usersRevokeCommand } from './commands/users_roles.js';
import { connectorsAddCommand } from './commands/connectors_add.js';
import { connectorsListCommand } from './commands/connectors_list.js';
import { connectorsRemoveCommand } from './commands/connectors_remove.js';
import { loginCommand } from './client/login.js';
import { logoutCommand } from './client/logout.js';
import { credentialDockerCommand, credentialGitCommand, credentialKubectlCommand } from './client/credential_commands.js';
import { tokenCommand } from './client/token.js';
import { whoamiCommand } from './client/whoami.js';
import { keysListCommand } from './commands/keys_list.js';
import { keysRotateCommand } from './commands/keys_rotate.js';
import { serveCommand } from './commands/serve.js';
import { secretKeyGenerateCommand } from './commands/secret_key_generate.js';
import { secretKeyRotateCommand } from './commands/secret_key_rotate.js';
import { usersAddCommand } from './commands/users_add.js';
import { usersUpdateCommand } from './commands/users_update.js';
import { usersDisableCommand } from './commands/users_disable.js';
import { usersEnableCommand } from './commands/users_enable.js';
import { usersRevokeTokensCommand } from './commands/users_revoke_tokens.js';
import { usersMfaResetCommand } from './commands/users_mfa_reset.js';
import { sessionsListCommand } from './commands/sessions_list.js';
import { sessionsRevokeCommand } from './commands/sessions_revoke.js';
import { usersListCommand } from './commands/users_list.js';
import { usersPasswdCommand } from './commands/users_passwd.js';

export const commands: Command[] = [
  loginCommand,
  tokenCommand,
  whoamiCommand,
  logoutCommand,
  credentialKubectlCommand,
  credentialGitCommand,
  credentialDockerCommand,
  serveCommand,
  usersAddCommand,
  usersUpdateCommand,
  usersListCommand,
  usersDisableCommand,
  usersEnableCommand,
  usersPasswdCommand,
  usersRevokeTokensCommand,
  usersMfaResetCommand,
  usersGrantCommand,
  usersRevokeCommand,
  rolesAddCommand,
  rolesUpdateCommand,
  rolesListCommand,
  rolesRemoveCommand,
  sessionsListCommand,
  sessionsRevokeCommand,
  clientsAddCommand,
  clientsListCommand,
  clientsRemoveCommand,
  clientsGrantCommand,
  clientsRotateSecretCommand,
  clientsDisableCommand,
  clientsEnableCommand,
  clientsRegistrationTokenCommand,
  connectorsAddCommand,
  connectorsListCommand,
  connectorsRemoveCommand,
  apisAddCommand,
  apisUpdateCommand,
  apisListCommand,
  apisRemoveCommand,
  keysListCommand,
  keysRotateCommand,
  secretKeyGenerateCommand,
  secretKeyRotateCommand,
];

export const configExitCode = 3;

const clientCommands = new Set<Command>([loginCommand, tokenCommand, whoamiCommand, logoutCommand, credentialKubectlCommand, credentialGitCommand, credentialDockerCommand]);

function globalUsage(): string {
  const width = Math.max(...commands.map((c) => c.path.join(' ').length));
  return [
    'latchkey — an OAuth 2.0 / OpenID Connect identity provider for CLIs, devices and browsers',
    '',
    'Usage: latchkey <command> [options]',
    '',
    'Sign in from this machine:',
    ...commands.filter((c) => clientCommands.has(c)).map((c) => `  ${c.path.join(' ').padEnd(width)}  ${c.summary}`),
    '',
    'Run and administer the server, also while it runs (on LATCHKEY_DB: a SQLite file, default ./data/latchkey.db,',
    'or a postgres:// URL):',
    ...commands.filter((c) => !clientCommands.has(c)).map((c) => `  ${c.path.join(' ').padEnd(width)}  ${c.summary}`),
    '',
    'Run "latchkey <command> --help" for the options of a command.',
    '',
    'Exit codes: 0 success, 1 failure, 2 usage error, 3 bad configuration, 4 sign-in denied,',
    '            5 code expired or sign-in timed out, 6 not signed in (run latchkey login), 130 interrupted.',
    '',
  ].join('\n');
}

function commandUsage(command: Command): string {
  return `${command.summary}\n\nUsage: ${command.usage}\n${command.help ? `\n${command.help.trimEnd()}\n` : ''}`;
}

function findCommand(args: string[]): { command: Command; rest: string[] } | undefined {
  const words = args.filter((a) => !a.startsWith('-'));
  const matches = commands
    .filter((c) => c.path.every((word, i) => words[i] === word))
    .sort((a, b) => b.path.length - a.path.length);
  const command = matches[0];
  if (!command) return undefined;
  const rest = [...args];
  for (const word of command.path) rest.splice(rest.indexOf(word), 1);
  return { command, rest };
}

export async function main(args: string[], io: CommandIo): Promise<number> {
  const wantsHelp = args.includes('--help') || args.includes('-h');
  if (args.length === 0 || args[0] === 'help' || (wantsHelp && !findCommand(args))) {
    (args.length === 0 ? io.stderr : io.stdout).write(globalUsage());
    return args.length === 0 ? exitCodes.usage : exitCodes.ok;
  }
  const found = findCommand(args);
  if (!found) {
    io.stderr.write(`latchkey: unknown command "${args.filter((a) => !a.startsWith('-')).slice(0, 2).join(' ')}"\n\n${globalUsage()}`);
    return exitCodes.usage;
  }
  const { command, rest } = found;
  if (wantsHelp) {
    io.stdout.write(commandUsage(command));
    return exitCodes.ok;
  }

  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: rest, options: command.options, allowPositionals: true, strict: true });
  } catch (err) {
    io.stderr.write(`latchkey: ${(err as Error).message}\n\nUsage: ${command.usage}\n`);
    return exitCodes.usage;
  }
  const { min, max } = command.positionals;
  if (parsed.positionals.length < min || parsed.positionals.length > max) {
    io.stderr.write(`latchkey: wrong number of arguments\n\nUsage: ${command.usage}\n`);
    return exitCodes.usage;
  }

  let config: Config | undefined;
  let store: Promise<Store> | undefined;
  let box: Promise<SecretBox> | undefined;
  try {
    return await command.run({
      ...io,
      values: parsed.values as Record<string, string | boolean | string[] | undefined>,
      positionals: parsed.positionals,
      config: () => (config ??= loadConfig(io.env)),
      store: () => (store ??= openConfiguredStore((config ??= loadConfig(io.env)))),
      secretBox: () =>
        (box ??= (async () => {
          const c = (config ??= loadConfig(io.env));
          return openSecretBox(c, await (store ??= openConfiguredStore(c)));
        })()),
    });
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const problem of err.problems) io.stderr.write(`latchkey: ${problem}\n`);
      return configExitCode;
    }
    if (err instanceof SecretKeyError) {
      io.stderr.write(`latchkey: LATCHKEY_SECRET_KEY: ${err.message}\n`);
      return configExitCode;
    }
    if (err instanceof AdminInputError) {
      io.stderr.write(`latchkey: ${err.message}\n`);
      return exitCodes.usage;
    }
    if (err instanceof CommandError) {
      io.stderr.write(`latchkey: ${err.message}\n`);
      return err.exitCode;
    }
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      io.stderr.write(`latchkey: PORT/HOST: cannot listen: ${(err as Error).message}\n`);
      return exitCodes.failure;
    }
    io.stderr.write(`latchkey: unexpected error: ${(err as Error).message}\n`);
    return exitCodes.failure;
  } finally {
    // A store that failed to open has nothing to close (its error was reported above).
    const opened = await store?.catch(() => undefined);
    await opened?.close();
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
      process.stderr.write(`latchkey: unexpected error: ${(err as Error).message}\n`);
      process.exitCode = 1;
    },
  );
}
