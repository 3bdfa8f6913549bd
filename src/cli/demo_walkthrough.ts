/**
 * What `latchkey serve --demo` prints once it listens: that it is a demo, who and what it holds,
 * and the steps of a first sign-in from a terminal, each a command to copy. The demo people's
 * passwords appear here and nowhere else (never in the log, never in a file).
 */

export interface DemoPerson {
  username: string;
  password: string;
  /** What the person may do at the demo API, in a few words. */
  holds: string;
}

export interface DemoSetup {
  issuer: string;
  /** Where the server listens (loopback only). */
  address: string;
  /** The throwaway database, for admin commands run from another terminal. */
  databasePath: string;
  people: DemoPerson[];
  cliClientId: string;
  webClientId: string;
  webClientSecret: string;
  webRedirectUri: string;
  apiIdentifier: string;
  apiScopes: string[];
  /** Environment variables the demo set aside (it never uses the configured database or key). */
  ignored: string[];
}

/** The command a person types first: the Device Code flow (RFC 8628) against the demo issuer. */
export function demoLoginCommand(setup: Pick<DemoSetup, 'issuer' | 'cliClientId' | 'apiIdentifier' | 'apiScopes'>): string {
  const scope = ['openid', 'email', 'profile', 'offline_access', setup.apiScopes[0] ?? ''].join(' ').trim();
  return `npx latchkey login --device --issuer ${setup.issuer} --client-id ${setup.cliClientId} --audience ${setup.apiIdentifier} --scope "${scope}"`;
}

export function demoWalkthrough(setup: DemoSetup): string {
  const [person] = setup.people;
  const admin = `LATCHKEY_DB=${setup.databasePath} npx latchkey`;
  const lines = [
    `Latchkey is listening on ${setup.address} (issuer ${setup.issuer}) — a DEMO: nothing here is kept`,
    `The database and its secret key are in ${setup.databasePath.replace(/\/[^/]*$/, '')} and are deleted when this stops.`,
    ...(setup.ignored.length > 0 ? [`Not used by the demo: ${setup.ignored.join(', ')} (it never touches your configured database or key).`] : []),
    '',
    'In the demo:',
    ...setup.people.map((p) => `  person  ${p.username.padEnd(8)} password: ${p.password}   (${p.holds})`),
    `  API     ${setup.apiIdentifier} with scopes ${setup.apiScopes.join(', ')}`,
    `  client  ${setup.cliClientId.padEnd(8)} a command-line tool (public; device code and browser sign-in)`,
    `  client  ${setup.webClientId.padEnd(8)} a web application (confidential; redirect ${setup.webRedirectUri}; client_secret ${setup.webClientSecret})`,
    '',
    'Try it, in another terminal:',
    '  1. Sign in from the terminal:',
    `       ${demoLoginCommand(setup)}`,
    `  2. It prints a code and an address. Open ${setup.issuer}/activate in a browser, check the code,`,
    `     sign in as ${person?.username ?? 'alice'} with password ${person?.password ?? ''}, and press Allow.`,
    '  3. See the stored sign-in:',
    '       npx latchkey status',
    '       npx latchkey token        # the access token (a JWT) for the API',
    '  4. End every sign-in as an administrator would (the admin commands work on the demo database):',
    `       ${admin} users revoke-tokens ${person?.username ?? 'alice'}`,
    '     then sign in again: the stored profile knows the issuer and the client.',
    '       npx latchkey login --device',
    '  5. Sign out:',
    '       npx latchkey logout',
    '',
    `Pages: ${setup.issuer}/account (your devices and apps), ${setup.issuer}/.well-known/openid-configuration`,
    'Press Ctrl-C to stop; the demo database and key are then deleted.',
  ];
  return lines.join('\n') + '\n';
}
