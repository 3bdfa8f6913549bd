/** The shape of one `latchkey` subcommand and what it is given to run. */
import type { ParseArgsConfig } from 'node:util';
import type { Config } from '../config.js';
import type { Store } from '../store/store.js';
import type { SecretBox } from '../crypto/secret_box.js';

export interface CommandIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (mode: boolean) => unknown };
  env: NodeJS.ProcessEnv;
}

export interface CommandContext extends CommandIo {
  values: Record<string, string | boolean | string[] | boolean[] | undefined>;
  positionals: string[];
  config(): Config;
  /** Opens LATCHKEY_DB (running migrations); closed by the dispatcher when the command ends. */
  store(): Promise<Store>;
  /** The key(s) that encrypt server secrets (LATCHKEY_SECRET_KEY or the key file). */
  secretBox(): Promise<SecretBox>;
}

/** A command's module: how to call it. Its name and summary are in command_index.ts. */
export interface Command {
  usage: string;
  /** Options, defaults and exit codes, for `latchkey <command> --help`. */
  help?: string;
  /** How many positional arguments it takes. */
  positionals: { min: number; max: number };
  options: NonNullable<ParseArgsConfig['options']>;
  /** Returns the exit code. */
  run(context: CommandContext): Promise<number>;
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

export class CommandError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = exitCodes.failure,
  ) {
    super(message);
    this.name = 'CommandError';
  }
}
