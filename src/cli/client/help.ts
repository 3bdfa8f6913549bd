/** Help text the client commands share: the profile option and the exit codes. */
export const profileOptionHelp = `  --profile P       the stored sign-in to use (default: default)
  Credentials: ~/.latchkey/credentials.json (LATCHKEY_HOME replaces ~/.latchkey).`;

export const exitCodesHelp = `Exit codes: 0 ok, 1 failure, 2 usage, 3 configuration, 4 denied, 5 expired or timed out,
            6 not signed in (run latchkey login), 130 interrupted.`;

/** The --help text of a client command: its own options, then the shared ones. */
export function clientHelp(options = ''): string {
  return `Options:\n${options}${profileOptionHelp}\n\n${exitCodesHelp}\n`;
}
