/**
 * Getting a password from a person: from stdin with --password-stdin (for scripts), typed twice
 * without echo on a terminal, or, with neither, generated and shown once.
 */
import type { CommandIo } from './command.js';
import { CommandError } from './command.js';
import { generatedPassword } from '../directory/generated_password.js';

export async function readAll(stdin: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

function promptHidden(io: CommandIo, question: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stdin = io.stdin;
    io.stderr.write(question);
    let typed = '';
    stdin.setRawMode?.(true);
    stdin.resume();
    const onData = (data: Buffer) => {
      for (const char of data.toString('utf8')) {
        if (char === '\r' || char === '\n') {
          finish();
          resolve(typed);
          return;
        }
        if (char === '\u0003') {
          finish();
          reject(new CommandError('cancelled'));
          return;
        }
        if (char === '\u007f' || char === '\b') typed = typed.slice(0, -1);
        else typed += char;
      }
    };
    const finish = () => {
      stdin.off('data', onData);
      stdin.setRawMode?.(false);
      stdin.pause();
      io.stderr.write('\n');
    };
    stdin.on('data', onData);
  });
}

export interface PasswordChoice {
  password: string;
  generated: boolean;
}

export async function obtainPassword(io: CommandIo, fromStdin: boolean): Promise<PasswordChoice> {
  if (fromStdin) {
    const password = (await readAll(io.stdin)).replace(/\r?\n$/, '');
    return { password, generated: false };
  }
  if (io.stdin.isTTY) {
    const first = await promptHidden(io, 'Password: ');
    const second = await promptHidden(io, 'Repeat password: ');
    if (first !== second) throw new CommandError('the passwords did not match');
    return { password: first, generated: false };
  }
  return { password: generatedPassword(), generated: true };
}
