/**
 * The shape of one `latchkey` subcommand and what it is given to run. A command module writes
 * `defineCommand({ …, options, run })`: the values `run` reads are typed by its own parseArgs
 * options (`{ type: 'string' }` a string, `multiple: true` an array), so no option is read by cast.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { Config } from '../config.js';
import type { Store } from '../store/store.js';
import type { SecretBox } from '../crypto/secret_box.js';

export interface CommandIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (mode: boolean) => unknown };
  env: NodeJS.ProcessEnv;
}

/** What the dispatcher (main.ts) gives every command, whatever its options. */
export interface CommandServices extends CommandIo {
  /**
   * The environment over the `server` section of the configuration file — the command's
   * `--config FILE` if it has that option, else LATCHKEY_CONFIG — over the defaults.
   */
  config(): Config;
  /** Opens LATCHKEY_DB (running migrations); closed by the dispatcher when the command ends. */
  store(): Promise<Store>;
  /** The key(s) that encrypt server secrets (LATCHKEY_SECRET_KEY or the key file). */
  secretBox(): Promise<SecretBox>;
}

/** What a command's `run` gets: the services, its positionals and its option values (`V`: those a helper reads). */
export interface CommandContext<V = unknown> extends CommandServices {
  values: V;
  positionals: string[];
}

export type CommandOptions = NonNullable<ParseArgsConfig['options']>;

/** How every command's arguments are read: its own options only (strict), positionals allowed. */
interface ParseConfig<O extends CommandOptions> {
  args: string[];
  options: O;
  allowPositionals: true;
  strict: true;
}

type Parsed<O extends CommandOptions> = ReturnType<typeof parseArgs<ParseConfig<O>>>;

/** The values parseArgs gives for the options `O`; an option not given is absent. */
export type OptionValues<O extends CommandOptions> = Parsed<O>['values'];

/** A command as its module writes it. */
export interface CommandDefinition<O extends CommandOptions> {
  usage: string;
  /** Options, defaults and exit codes, for `latchkey <command> --help`. */
  help?: string;
  /** How many positional arguments it takes. */
  positionals: { min: number; max: number };
  options: O;
  /**
   * Works through the management API when a server is given (`--server URL` or LATCHKEY_SERVER,
   * see management_client.ts); an admin command without it is refused then.
   */
  remote?: boolean;
  /**
   * Only reads the database: an existing SQLite file is opened for reading only, with no migration
   * and no key file made, so the command works where the file cannot be written.
   */
  readOnly?: boolean;
  /** Returns the exit code. */
  run(context: CommandContext<OptionValues<O>>): Promise<number>;
}

/** A command's arguments, read: its positionals, and its run with the option values bound. */
export interface ParsedCommand {
  positionals: string[];
  /** `--config FILE`, for a command with that option: the configuration file its config() and store() read. */
  configFile: string | undefined;
  run(services: CommandServices): Promise<number>;
}

/** A command's module: how to call it. Its name and summary are in command_index.ts. */
export interface Command {
  usage: string;
  help: string | undefined;
  positionals: { min: number; max: number };
  /** Its options, as parseArgs reads them (also what shell completion offers). */
  options: CommandOptions;
  /** Works through the management API when a server is given. */
  remote: boolean;
  /** Only reads the database (see CommandDefinition). */
  readOnly: boolean;
  /** Reads `args` (the words after the command's name); throws parseArgs' error on an unknown option or a missing value. */
  parse(args: string[]): ParsedCommand;
}

export function defineCommand<const O extends CommandOptions>(definition: CommandDefinition<O>): Command {
  return {
    usage: definition.usage,
    help: definition.help,
    positionals: definition.positionals,
    options: definition.options,
    remote: definition.remote === true,
    readOnly: definition.readOnly === true,
    parse(args) {
      const parsed: Parsed<O> = parseArgs<ParseConfig<O>>({ args, options: definition.options, allowPositionals: true, strict: true });
      const { config } = parsed.values as { config?: unknown };
      return {
        positionals: parsed.positionals,
        configFile: typeof config === 'string' ? config : undefined,
        run: (services) => definition.run({ ...services, values: parsed.values, positionals: parsed.positionals }),
      };
    },
  };
}

/** One subcommand in the index (command_index.ts): its words, its line in the help, how to load it. */
export interface CommandEntry {
  /** Words after `latchkey`, e.g. ['users', 'add']. */
  path: string[];
  summary: string;
  /** A command people run on their own machines (listed first in the help). */
  client: boolean;
  load(): Promise<Command>;
}

export const exitCodes = {
  ok: 0,
  failure: 1,
  usage: 2,
  config: 3,
  /** The person denied the sign-in. */
  accessDenied: 4,
  /** The device code expired, or nobody completed the browser sign-in in time. */
  expired: 5,
  /** No stored sign-in for the profile, or it ended (revoked, expired): run `latchkey login`. */
  notSignedIn: 6,
  /** Stopped with Ctrl-C. */
  interrupted: 130,
} as const;

/** Where the server of the admin commands' remote mode is named (`--server URL` is read into it). */
export const serverVariable = 'LATCHKEY_SERVER';

export class CommandError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = exitCodes.failure,
  ) {
    super(message);
    this.name = 'CommandError';
  }
}
