/**
 * Shell completion scripts for bash, zsh and fish, written from the command tree (the index's
 * commands with their options): the commands and groups after `latchkey`, a group's commands after
 * its name, a command's options after the command. The scripts hold names and summaries only —
 * nothing from the credentials file or the environment — and complete no values (no profile or
 * token is ever read while completing).
 */

export interface CompletionFlag {
  /** The long name, without the dashes. */
  name: string;
  /** Whether it takes a value (the next word is then not completed as an option). */
  takesValue: boolean;
}

export interface CompletionCommand {
  path: string[];
  summary: string;
  flags: CompletionFlag[];
  /** The words its argument may be, when they are few and fixed (e.g. completion's shells). */
  values?: string[];
}

export type Shell = 'bash' | 'zsh' | 'fish';
export const shells: readonly Shell[] = ['bash', 'zsh', 'fish'];

/** The words the root offers besides commands. */
const rootOptions = ['--help', '--version'];

/** A node of the tree: the root (''), a group ('users') or a command ('users add'). */
interface Node {
  key: string;
  /** What may follow: subcommands with their summaries (a group or the root), or options (a command). */
  children: { word: string; summary: string }[];
  flags: CompletionFlag[];
  values: string[];
}

/** Every node, the root first. */
function nodes(commands: readonly CompletionCommand[]): Node[] {
  const byKey = new Map<string, Node>();
  const node = (key: string) => {
    let found = byKey.get(key);
    if (!found) byKey.set(key, (found = { key, children: [], flags: [], values: [] }));
    return found;
  };
  node('');
  for (const command of commands) {
    for (const [at, word] of command.path.entries()) {
      const depth = at + 1;
      const parent = node(command.path.slice(0, at).join(' '));
      const own = node(command.path.slice(0, depth).join(' '));
      if (!parent.children.some((c) => c.word === word)) {
        parent.children.push({ word, summary: depth === command.path.length ? command.summary : `${word} commands` });
      }
      if (depth === command.path.length) {
        own.flags = [...command.flags, { name: 'help', takesValue: false }];
        own.values = command.values ?? [];
      }
    }
  }
  return [...byKey.values()];
}

/** Single-quoted for sh, bash and zsh. */
const shQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/** Single-quoted for fish (backslash and quote escaped). */
const fishQuote = (text: string) => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** Words safe to write bare into a script: our command and option names only. */
const bare = /^(--)?[A-Za-z0-9][A-Za-z0-9-]*$/;
function checkWord(word: string): string {
  if (!bare.test(word)) throw new Error(`not a completion word: ${JSON.stringify(word)}`);
  return word;
}

function bashScript(tree: Node[]): string {
  const known = tree.filter((n) => n.key !== '').map((n) => n.key.split(' ').map(checkWord).join(' '));
  const cases = tree.map((n) => {
    const words =
      n.key === ''
        ? [...n.children.map((c) => c.word), ...rootOptions]
        : n.children.length > 0
          ? [...n.children.map((c) => c.word), '--help']
          : [...n.values, ...n.flags.map((f) => `--${f.name}`)];
    return `    ${shQuote(n.key)}) words=${shQuote(words.map(checkWord).join(' '))} ;;`;
  });
  const valueFlags = [...new Set(tree.flatMap((n) => n.flags.filter((f) => f.takesValue).map((f) => `--${checkWord(f.name)}`)))];
  return `# latchkey completion for bash: save where bash-completion finds it, or source it from ~/.bashrc
#   latchkey completion bash > ~/.local/share/bash-completion/completions/latchkey
_latchkey() {
  local cur prev path word candidate words
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  # An option that takes a value: the value is the person's to type.
  case " ${valueFlags.join(' ')} " in *" $prev "*) COMPREPLY=(); return ;; esac
  # The command typed so far: the words that extend a known command path (option values do not).
  path=""
  for word in "\${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
    case "$word" in -*) continue ;; esac
    candidate="\${path:+$path }$word"
    case "|${known.join('|')}|" in *"|$candidate|"*) path="$candidate" ;; esac
  done
  case "$path" in
${cases.join('\n')}
    *) words="" ;;
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -F _latchkey latchkey
`;
}

function zshScript(tree: Node[]): string {
  const known = tree.filter((n) => n.key !== '').map((n) => n.key.split(' ').map(checkWord).join(' '));
  const cases = tree.map((n) => {
    if (n.key === '' || n.children.length > 0) {
      const described = n.children.map((c) => shQuote(`${checkWord(c.word)}:${c.summary}`));
      const extra = n.key === '' ? rootOptions : ['--help'];
      return `    ${shQuote(n.key)})\n      described=(${described.join(' ')})\n      _describe -t commands 'latchkey command' described\n      compadd -- ${extra.join(' ')} ;;`;
    }
    return `    ${shQuote(n.key)})\n      compadd -- ${[...n.values, ...n.flags.map((f) => `--${f.name}`)].map(checkWord).join(' ')} ;;`;
  });
  const valueFlags = [...new Set(tree.flatMap((n) => n.flags.filter((f) => f.takesValue).map((f) => `--${checkWord(f.name)}`)))];
  return `#compdef latchkey
# latchkey completion for zsh: save as _latchkey in a folder of $fpath (before compinit runs)
#   latchkey completion zsh > "\${fpath[1]}/_latchkey"
_latchkey() {
  local word candidate cmdpath="" i
  local -a described
  local -a known=(${known.map(shQuote).join(' ')})
  local -a valueflags=(${valueFlags.join(' ')})
  # An option that takes a value: the value is the person's to type.
  if (( CURRENT > 2 )) && (( \${valueflags[(Ie)\${words[CURRENT-1]}]} )); then
    return 1
  fi
  # The command typed so far: the words that extend a known command path (option values do not).
  for (( i = 2; i < CURRENT; i++ )); do
    word=\${words[i]}
    [[ $word == -* ]] && continue
    candidate=\${cmdpath:+$cmdpath }$word
    (( \${known[(Ie)$candidate]} )) && cmdpath=$candidate
  done
  case $cmdpath in
${cases.join('\n')}
  esac
}
# Autoloaded from $fpath, this file is the body of _latchkey: complete now. Sourced: register.
if [[ \${funcstack[1]} == _latchkey ]]; then
  _latchkey "$@"
elif (( $+functions[compdef] )); then
  compdef _latchkey latchkey
fi
`;
}

function fishScript(tree: Node[], commands: readonly CompletionCommand[]): string {
  const lines = [
    '# latchkey completion for fish: save as ~/.config/fish/completions/latchkey.fish',
    '#   latchkey completion fish > ~/.config/fish/completions/latchkey.fish',
    'complete -c latchkey -f',
  ];
  const root = tree.find((n) => n.key === '') ?? { children: [] };
  const topWords = root.children.map((c) => checkWord(c.word));
  for (const child of root.children) {
    lines.push(`complete -c latchkey -n 'not __fish_seen_subcommand_from ${topWords.join(' ')}' -a ${checkWord(child.word)} -d ${fishQuote(child.summary)}`);
  }
  lines.push(`complete -c latchkey -n 'not __fish_seen_subcommand_from ${topWords.join(' ')}' -l version -d 'Print the version'`);
  for (const group of tree.filter((n) => n.key !== '' && n.children.length > 0)) {
    const subWords = group.children.map((c) => checkWord(c.word));
    for (const child of group.children) {
      lines.push(
        `complete -c latchkey -n '__fish_seen_subcommand_from ${checkWord(group.key)}; and not __fish_seen_subcommand_from ${subWords.join(' ')}' -a ${child.word} -d ${fishQuote(child.summary)}`,
      );
    }
  }
  for (const command of commands) {
    const condition = command.path.map((word) => `__fish_seen_subcommand_from ${checkWord(word)}`).join('; and ');
    for (const value of command.values ?? []) lines.push(`complete -c latchkey -n ${fishQuote(condition)} -a ${checkWord(value)}`);
    for (const flag of [...command.flags, { name: 'help', takesValue: false }]) {
      lines.push(`complete -c latchkey -n ${fishQuote(condition)} -l ${checkWord(flag.name)}${flag.takesValue ? ' -r' : ''}`);
    }
  }
  return lines.join('\n') + '\n';
}

export function completionScript(shell: Shell, commands: readonly CompletionCommand[]): string {
  const tree = nodes(commands);
  switch (shell) {
    case 'bash':
      return bashScript(tree);
    case 'zsh':
      return zshScript(tree);
    case 'fish':
      return fishScript(tree, commands);
  }
}
