/**
 * Why an admin command cannot work through the management API (`--server`): each works on what
 * only the server's own machine has — its database in one transaction, its secret key, its
 * environment — so the dispatcher refuses it with this reason instead of opening a local database
 * the person did not mean.
 */
export const localOnlyReasons: Readonly<Record<string, string>> = {
  serve: 'it runs the server itself, on the machine that holds its database',
  'config apply':
    'it applies the whole file in one database transaction (all or nothing) and reads the secrets the file references ({ env } and { file }) where it runs, which the API never receives',
  'config export': 'it reads every API, role, client and connector in one consistent snapshot of the database, which a series of API calls cannot give',
  'config show': "it shows the settings in effect on the machine it runs on (its environment and configuration file), not the server's",
  'secret-key generate': "a secret key belongs in the server's own environment (LATCHKEY_SECRET_KEY): make it on that machine, so it never travels",
  'secret-key rotate':
    "it re-seals the secrets stored in the database with a new key that only the server's machine holds; the key must never travel to the API",
};
