/**
 * `latchkey serve --demo`: a server to try, thrown away when it stops. It runs on a SQLite file in
 * a fresh private temporary folder with a key generated for it (never LATCHKEY_DB or the configured
 * key), listens on loopback only, and is seeded through the admin commands themselves — people
 * with generated passwords, a command-line client, a web application, an API with scopes and a
 * role — so that it holds exactly what an operator following the docs would have made.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { loadConfig, type Config } from '../config.js';
import { generateSecretKeyText } from '../crypto/secret_box.js';
import { writeKeyFile } from '../crypto/secret_key_file.js';
import { randomString } from '../crypto/secrets.js';
import { prepareDatabase } from '../prepare_database.js';
import { startServer } from '../server.js';
import { openConfiguredStore } from '../store/open.js';
import { CommandError, exitCodes, type Command, type CommandContext, type CommandServices } from './command.js';
import { apisAddCommand } from './commands/apis_add.js';
import { clientsAddCommand } from './commands/clients_add.js';
import { rolesAddCommand } from './commands/roles.js';
import { usersAddCommand } from './commands/users_add.js';
import { usersGrantCommand } from './commands/users_roles.js';
import { demoWalkthrough, type DemoPerson, type DemoSetup } from './demo_walkthrough.js';
import { visible } from './terminal_text.js';

/**
 * Settings the demo replaces: where data and keys live, who the first user is, the issuer (the
 * demo's own address), extra processes, mail (a demo sends none) and the page title.
 */
const replacedSettings = [
  'LATCHKEY_DB',
  'LATCHKEY_SECRET_KEY',
  'LATCHKEY_SECRET_KEY_FILE',
  'LATCHKEY_CONFIG',
  'LATCHKEY_BOOTSTRAP_USER',
  'LATCHKEY_BOOTSTRAP_PASSWORD',
  'LATCHKEY_ISSUER',
  'LATCHKEY_WORKERS',
  'LATCHKEY_SMTP_URL',
  'LATCHKEY_PRODUCT_NAME',
] as const;

/** Loopback only: the demo's passwords are printed on a terminal, so no other machine may use them. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}

const passwordAlphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';

/** The environment the demo server runs with: the caller's tunables, the demo's data, key and address. */
export function demoEnvironment(env: NodeJS.ProcessEnv, databasePath: string): { env: NodeJS.ProcessEnv; ignored: string[] } {
  const host = env.HOST?.trim() || '127.0.0.1';
  if (!isLoopbackHost(host)) {
    throw new CommandError(
      `serve --demo listens on this machine only (HOST=${visible(host)} is not a loopback address): unset HOST, or run without --demo`,
      exitCodes.usage,
    );
  }
  const ignored = replacedSettings.filter((name) => (env[name]?.trim() ?? '') !== '');
  const kept = Object.fromEntries(Object.entries(env).filter(([name]) => !(replacedSettings as readonly string[]).includes(name)));
  const port = env.PORT?.trim() || '3000';
  return {
    ignored,
    env: {
      ...kept,
      HOST: host,
      PORT: port,
      LATCHKEY_ISSUER: `http://localhost:${port}`,
      LATCHKEY_DB: databasePath,
      // The key file beside the database (its default place), so that admin commands given only
      // LATCHKEY_DB open the demo database too; it goes with the folder.
      LATCHKEY_SECRET_KEY_FILE: `${databasePath}.key`,
      LATCHKEY_PRODUCT_NAME: 'Latchkey demo',
      // The terminal is for the walk-through; request logs only when asked for.
      LATCHKEY_LOG_LEVEL: env.LATCHKEY_LOG_LEVEL?.trim() || 'warn',
    },
  };
}

/** Runs one admin command in this process on the demo database; its output is not the person's. */
async function runAdminCommand(services: Omit<CommandServices, 'stdin' | 'stdout' | 'stderr'>, command: Command, args: string[], input = ''): Promise<string> {
  let output = '';
  const sink = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      output += chunk.toString();
      done();
    },
  });
  const parsed = command.parse(args);
  const code = await parsed.run({ ...services, stdout: sink, stderr: sink, stdin: Readable.from([input]) });
  if (code !== 0) throw new Error(`demo setup failed at "${args.join(' ')}": ${output.trim()}`);
  return output;
}

/** People, clients, an API and a role, made as an operator would make them (docs/getting-started.md). */
async function seedDemo(config: Config, env: NodeJS.ProcessEnv): Promise<Omit<DemoSetup, 'address' | 'ignored'>> {
  const store = await openConfiguredStore(config);
  try {
    const { secretBox } = await prepareDatabase(config, store, { refuseClearValues: false });
    const services = { env, config: () => config, store: async () => store, secretBox: async () => secretBox };
    const run = (command: Command, args: string[], input?: string) => runAdminCommand(services, command, args, input);

    const apiIdentifier = 'https://photos.example.com';
    const apiScopes = ['read:photos', 'write:photos'];
    await run(apisAddCommand, [apiIdentifier, '--name', 'Demo Photo API', ...apiScopes.flatMap((s) => ['--scope', s])]);
    await run(rolesAddCommand, [
      'photo-editor',
      '--description',
      'may read and change photos',
      ...apiScopes.flatMap((s) => ['--permission', `${apiIdentifier}:${s}`]),
    ]);

    const people: DemoPerson[] = [
      { username: 'alice', password: randomString(passwordAlphabet, 16), holds: 'role photo-editor: read:photos and write:photos' },
      { username: 'bob', password: randomString(passwordAlphabet, 16), holds: 'no role: signs in, but gets no API scopes' },
    ];
    const fullNames: Record<string, string> = { alice: 'Alice Liddell', bob: 'Bob Builder' };
    for (const person of people) {
      const args = [person.username, '--email', `${person.username}@example.com`, '--name', fullNames[person.username] ?? person.username, '--password-stdin'];
      await run(usersAddCommand, args, person.password);
    }
    await run(usersGrantCommand, ['alice', 'photo-editor']);

    const cliClientId = 'demo-cli';
    await run(clientsAddCommand, [
      cliClientId,
      '--name',
      'Demo CLI',
      '--grant-type',
      'device_code',
      '--grant-type',
      'authorization_code',
      '--grant-type',
      'refresh_token',
      '--redirect-uri',
      'http://127.0.0.1/callback',
    ]);
    const webClientId = 'demo-web';
    const webRedirectUri = 'http://localhost:8080/callback';
    const added = await run(clientsAddCommand, [webClientId, '--name', 'Demo Web App', '--confidential', '--redirect-uri', webRedirectUri]);
    const webClientSecret = /client_secret \(shown only once\): (\S+)/.exec(added)?.[1];
    if (webClientSecret === undefined) throw new Error(`demo setup: clients add printed no client_secret: ${added.trim()}`);
    return {
      issuer: config.issuer,
      databasePath: config.databasePath,
      people,
      cliClientId,
      webClientId,
      webClientSecret,
      webRedirectUri,
      apiIdentifier,
      apiScopes,
    };
  } finally {
    await store.close();
  }
}

/** Runs the demo until SIGINT/SIGTERM, then deletes its folder (database and key). */
export async function serveDemo(context: CommandContext): Promise<number> {
  let stopSignal: NodeJS.Signals | undefined;
  let stop: (() => void) | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    stopSignal ??= signal;
    stop?.();
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);

  // Refused before anything is made.
  demoEnvironment(context.env, '');
  // mkdtemp makes the folder 0700: the key file in it is the demo's alone.
  const folder = mkdtempSync(join(tmpdir(), 'latchkey-demo-'));
  // Also on an exit that skips the finally below (process.exit from elsewhere).
  const removeFolder = () => rmSync(folder, { recursive: true, force: true });
  process.once('exit', removeFolder);
  try {
    const databasePath = join(folder, 'latchkey.db');
    const { env, ignored } = demoEnvironment(context.env, databasePath);
    writeKeyFile(`${databasePath}.key`, [generateSecretKeyText()]);
    const config = loadConfig(env);
    const seeded = await seedDemo(config, env);
    if (stopSignal) return 0;
    // The ordinary start banner (first user, next steps) does not fit a seeded demo: the walk-through replaces it.
    const quiet = new Writable({ write: (_chunk, _encoding, done) => done() });
    const running = await startServer(config, quiet);
    context.stdout.write(demoWalkthrough({ ...seeded, address: running.address, ignored }));
    await new Promise<void>((resolve) => {
      stop = () => void running.close().then(resolve, resolve);
      if (stopSignal) stop();
    });
    return 0;
  } finally {
    removeFolder();
    process.removeListener('exit', removeFolder);
  }
}
