/**
 * `latchkey completion bash|zsh|fish`: prints a completion script for the shell, made from the
 * command index and each command's own options, so it always matches this version's commands.
 */
import { CommandError, defineCommand, exitCodes, type Command, type CommandEntry } from './command.js';
import { completionScript, shells, type CompletionCommand, type Shell } from './completion_scripts.js';

/** Every command with its long options (loading each command's module, which only completion needs). */
async function completionCommands(index: readonly CommandEntry[]): Promise<CompletionCommand[]> {
  return Promise.all(
    index.map(async (entry) => {
      const command = await entry.load();
      return {
        path: entry.path,
        summary: entry.summary,
        flags: Object.entries(command.options).map(([name, option]) => ({ name, takesValue: option.type === 'string' })),
        ...(entry.path.join(' ') === 'completion' ? { values: [...shells] } : {}),
      };
    }),
  );
}

/** The command, given the index it completes (passed in: the index lists this command too). */
export function completionCommand(index: readonly CommandEntry[]): Command {
  return defineCommand({
    usage: 'latchkey completion bash|zsh|fish',
    help: [
      'Prints a completion script for the shell on stdout; save it once:',
      '  bash   latchkey completion bash > ~/.local/share/bash-completion/completions/latchkey',
      '  zsh    latchkey completion zsh > "${fpath[1]}/_latchkey"     (before compinit runs)',
      '  fish   latchkey completion fish > ~/.config/fish/completions/latchkey.fish',
      'It completes commands, groups and options; it reads no credentials and completes no values.',
      '',
    ].join('\n'),
    positionals: { min: 1, max: 1 },
    options: {},
    async run(context) {
      const shell = context.positionals[0] ?? '';
      if (!(shells as readonly string[]).includes(shell)) throw new CommandError(`no completion for "${shell}": say bash, zsh or fish`, exitCodes.usage);
      context.stdout.write(completionScript(shell as Shell, await completionCommands(index)));
      return exitCodes.ok;
    },
  });
}
