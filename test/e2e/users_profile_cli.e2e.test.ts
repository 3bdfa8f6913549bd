/**
 * `latchkey users add|update|list` with the OIDC standard claims, run through the executable's
 * entry point (in this process) on a real SQLite file: what an operator types, what is stored, what
 * is listed and audited, and the one-line errors with their exit codes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/main.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite_store.js';

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-users-profile-'));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Runs `latchkey <args>` through the executable's entry point, in this process, on the test's database. */
async function latchkey(args: string[], input = ''): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const stdin = new PassThrough();
  stdin.end(input);
  let out = '';
  let err = '';
  stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const code = await main(args, { stdout, stderr, stdin, env: { LATCHKEY_DB: join(dir, 'latchkey.db') } });
  return { code, stdout: out, stderr: err };
}

interface ListedUser {
  username: string;
  email: string;
  name: string | null;
  profile: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

async function listed(username: string): Promise<ListedUser> {
  const result = await latchkey(['users', 'list', '--json']);
  expect(result.code, result.stderr).toBe(0);
  const user = (JSON.parse(result.stdout) as ListedUser[]).find((u) => u.username === username);
  expect(user).toBeDefined();
  return user!;
}

/** The stored audit events of that name, oldest first. */
async function stored(event: string): Promise<Array<Record<string, unknown>>> {
  const store = new SqliteStore({ path: join(dir, 'latchkey.db') });
  try {
    return (await store.listAuditEvents({ event, limit: 100 })).reverse().map((e) => ({ actor: e.actor, ...e.details }));
  } finally {
    await store.close();
  }
}

/** Makes alice's record look a few years old (the CLI reads the real clock, and tests do not wait). */
async function ageAlice(): Promise<void> {
  const store = new SqliteStore({ path: join(dir, 'latchkey.db') });
  try {
    store.db.prepare("UPDATE users SET created_at = ?, updated_at = ? WHERE username = 'alice'").run(Date.UTC(2020, 0, 1) / 1000, Date.UTC(2020, 0, 1) / 1000);
  } finally {
    await store.close();
  }
}

async function addAlice(extra: string[] = []): Promise<void> {
  const added = await latchkey(
    ['users', 'add', 'alice', '--email', 'alice@example.com', '--name', 'Alice Liddell', '--password-stdin', ...extra],
    'alice-password',
  );
  expect(added.code, added.stderr).toBe(0);
}

describe('latchkey users add with profile claims', () => {
  it('stores every claim given, lists it with --json (profile and updated_at), and a phone number without a flag is unverified', async () => {
    await addAlice([
      '--given-name',
      'Alice',
      '--family-name',
      'Liddell',
      '--middle-name',
      'Pleasance',
      '--nickname',
      'Al',
      '--profile-url',
      'https://example.com/~alice',
      '--picture',
      'https://example.com/alice.png',
      '--website',
      'https://alice.example',
      '--gender',
      'female',
      '--birthdate',
      '0000-05-04',
      '--zoneinfo',
      'europe/london',
      '--locale',
      'en-gb',
      '--phone-number',
      '+44 20 7946 0958',
      '--street-address',
      'Christ Church, St Aldates',
      '--locality',
      'Oxford',
      '--region',
      'Oxfordshire',
      '--postal-code',
      'OX1 1DP',
      '--country',
      'GB',
      '--address-formatted',
      'Christ Church\\nOxford OX1 1DP\\nUnited Kingdom',
    ]);
    const alice = await listed('alice');
    expect(alice).toMatchObject({ email: 'alice@example.com', name: 'Alice Liddell' });
    expect(alice.profile).toStrictEqual({
      given_name: 'Alice',
      family_name: 'Liddell',
      middle_name: 'Pleasance',
      nickname: 'Al',
      profile: 'https://example.com/~alice',
      picture: 'https://example.com/alice.png',
      website: 'https://alice.example',
      gender: 'female',
      birthdate: '0000-05-04',
      zoneinfo: 'Europe/London',
      locale: 'en-GB',
      phone_number: '+44 20 7946 0958',
      phone_number_verified: false,
      address: {
        formatted: 'Christ Church\nOxford OX1 1DP\nUnited Kingdom',
        street_address: 'Christ Church, St Aldates',
        locality: 'Oxford',
        region: 'Oxfordshire',
        postal_code: 'OX1 1DP',
        country: 'GB',
      },
    });
    expect(alice.updated_at).toBe(alice.created_at);
    expect(alice.updated_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
  });

  it('a user added with no profile options lists profile {}', async () => {
    await addAlice();
    expect((await listed('alice')).profile).toStrictEqual({});
  });

  it('a bad value is one line and exit 2, and no user is made', async () => {
    for (const [args, message] of [
      [['--birthdate', '1990-02-30'], 'latchkey: --birthdate "1990-02-30" is not a real date\n'],
      [['--picture', 'ftp://example.com/a.png'], 'latchkey: --picture must be an http or https URL\n'],
      [['--phone-number-verified'], 'latchkey: --phone-number-verified and --phone-number-unverified need a phone number (--phone-number)\n'],
      [['--zoneinfo', 'Mars/Olympus'], 'latchkey: --zoneinfo "Mars/Olympus" is not a known IANA time zone (e.g. Europe/Paris, America/New_York, UTC)\n'],
    ] as const) {
      const result = await latchkey(['users', 'add', 'bob', '--email', 'bob@example.com', '--password-stdin', ...args], 'bob-password');
      expect(result.code, message).toBe(2);
      expect(result.stderr).toBe(message);
    }
    expect(JSON.parse((await latchkey(['users', 'list', '--json'])).stdout)).toEqual([]);
  });
});

describe('latchkey users update', () => {
  it('merges the options given into the stored claims, address members into the stored address, and moves updated_at', async () => {
    await addAlice([
      '--given-name',
      'Alice',
      '--nickname',
      'Al',
      '--locality',
      'Oxford',
      '--country',
      'GB',
      '--phone-number',
      '+44 20 7946 0958',
      '--phone-number-verified',
    ]);
    await ageAlice();
    const before = await listed('alice');
    expect(before.updated_at).toBe('2020-01-01T00:00:00Z');
    const updated = await latchkey([
      'users',
      'update',
      'alice',
      '--family-name',
      'Liddell',
      '--postal-code',
      'OX1 1DP',
      '--locality',
      'Oxford ',
      '--email',
      'alice@oxford.example',
    ]);
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.stderr).toContain('Updated alice: email, family_name, address\n');
    const after = await listed('alice');
    expect(after).toMatchObject({ email: 'alice@oxford.example', name: 'Alice Liddell', created_at: before.created_at });
    expect(after.profile).toStrictEqual({
      given_name: 'Alice',
      family_name: 'Liddell',
      nickname: 'Al',
      phone_number: '+44 20 7946 0958',
      phone_number_verified: true,
      address: { locality: 'Oxford', postal_code: 'OX1 1DP', country: 'GB' },
    });
    expect(Date.parse(after.updated_at)).toBeGreaterThan(Date.now() - 60_000);

    // Audited with the names of the changed claims, never their values.
    const line = updated.stderr.split('\n').find((l) => l.includes('"event":"user.updated"'));
    expect(JSON.parse(line!)).toMatchObject({ event: 'user.updated', username: 'alice', claims: ['email', 'family_name', 'address'] });
    expect(line).not.toContain('Liddell');
    expect(line).not.toContain('oxford.example');
    expect(await stored('user.updated')).toEqual([{ actor: 'cli', username: 'alice', claims: ['email', 'family_name', 'address'] }]);

    // A new phone number without a flag is unverified.
    expect((await latchkey(['users', 'update', 'ALICE', '--phone-number', '+44 1865 276150'])).code).toBe(0);
    expect((await listed('alice')).profile).toMatchObject({ phone_number: '+44 1865 276150', phone_number_verified: false });
    expect((await latchkey(['users', 'update', 'alice', '--phone-number-verified'])).code).toBe(0);
    expect((await listed('alice')).profile).toMatchObject({ phone_number_verified: true });
  });

  it('--clear removes claims, one address member or the whole address, and the name', async () => {
    await addAlice(['--given-name', 'Alice', '--nickname', 'Al', '--locality', 'Oxford', '--country', 'GB', '--phone-number', '+44 20 7946 0958']);
    let result = await latchkey(['users', 'update', 'alice', '--clear', 'nickname', '--clear', 'country', '--clear', 'name']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain('Updated alice: name, nickname, address\n');
    let alice = await listed('alice');
    expect(alice.name).toBeNull();
    expect(alice.profile).toStrictEqual({
      given_name: 'Alice',
      phone_number: '+44 20 7946 0958',
      phone_number_verified: false,
      address: { locality: 'Oxford' },
    });

    result = await latchkey(['users', 'update', 'alice', '--clear', 'address', '--clear', 'phone_number']);
    expect(result.code, result.stderr).toBe(0);
    alice = await listed('alice');
    expect(alice.profile).toStrictEqual({ given_name: 'Alice' });
    expect(await stored('user.updated')).toEqual([
      { actor: 'cli', username: 'alice', claims: ['name', 'nickname', 'address'] },
      { actor: 'cli', username: 'alice', claims: ['phone_number', 'phone_number_verified', 'address'] },
    ]);

    // Setting what is already stored changes nothing and audits nothing.
    result = await latchkey(['users', 'update', 'alice', '--given-name', 'Alice']);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('Nothing changed: alice already has these values\n');
    expect(await stored('user.updated')).toHaveLength(2);
  });

  it('errors: nothing to change and bad values are usage errors (2), an unknown user is a failure (1); nothing is stored', async () => {
    await addAlice(['--nickname', 'Al']);
    for (const [args, code, message] of [
      [['users', 'update', 'alice'], 2, 'latchkey: nothing to change: give --email, --name, a profile option or --clear <claim>\n'],
      [['users', 'update', 'alice', '--clear', 'email'], 2, 'latchkey: --clear email: every user has an email; give another with --email\n'],
      [
        ['users', 'update', 'alice', '--nickname', 'B', '--clear', 'nickname'],
        2,
        'latchkey: --clear nickname cannot be combined with the option that sets it\n',
      ],
      [['users', 'update', 'alice', '--locale', 'en_US'], 2, 'latchkey: --locale "en_US" is not a BCP 47 language tag (e.g. en-US, fr-CA, zh-Hant-TW)\n'],
      [
        ['users', 'update', 'alice', '--phone-number', '555'],
        2,
        'latchkey: --phone-number must be 4-32 characters: an optional +, at least 4 digits, spaces and ( ) - . and an optional ;ext=digits (e.g. +1 425 555 1212)\n',
      ],
      [['users', 'update', 'alice', '--nickname', 'A\u0007l'], 2, 'latchkey: --nickname must not contain control characters\n'],
      [['users', 'update', 'alice', '--website', 'https://user:pw@example.com'], 2, 'latchkey: --website must not carry a user name or password\n'],
      [['users', 'update', 'nobody', '--nickname', 'N'], 1, 'latchkey: no user "nobody"\n'],
    ] as const) {
      const result = await latchkey([...args]);
      expect(result.code, message).toBe(code);
      expect(result.stderr).toBe(message);
    }
    const unknownOption = await latchkey(['users', 'update', 'alice', '--profile', 'https://example.com']);
    expect(unknownOption.code).toBe(2);
    expect(unknownOption.stderr).toContain("Unknown option '--profile'");
    const alice = await listed('alice');
    expect(alice.profile).toStrictEqual({ nickname: 'Al' });
    expect(alice.updated_at).toBe(alice.created_at);
    expect(await stored('user.updated')).toEqual([]);
  });

  it('--help shows the profile options and --clear', async () => {
    const help = await latchkey(['users', 'update', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain(
      'Usage: latchkey users update <username> [--email <email>] [--name <full name>] [profile claim options] [--clear <claim>]...',
    );
    for (const option of ['--given-name', '--profile-url', '--phone-number-verified', '--address-formatted', '--clear <claim>'])
      expect(help.stdout).toContain(option);
    expect((await latchkey(['users', 'add', '--help'])).stdout).toContain('--birthdate <date>');
    expect((await latchkey(['--help'])).stdout).toMatch(/users update\s+Change a user's email, name or profile claims/);
  });
});
