/**
 * Every `latchkey` subcommand by name, with what `latchkey --help` says of it, and how to load it.
 * A command's module (and what it imports: the server, LDAP, WebAuthn, SMTP, PostgreSQL…) is loaded
 * only when that command runs, so `latchkey token` — which git, kubectl and docker start for every
 * operation — does not pay for the rest.
 */
import type { CommandEntry } from './command.js';

export type { CommandEntry } from './command.js';

export const commandIndex: readonly CommandEntry[] = [
  {
    path: ['login'],
    summary: 'Sign in from this machine (browser, or --device for machines without one)',
    client: true,
    load: async () => (await import('./client/login.js')).loginCommand,
  },
  {
    path: ['token'],
    summary: 'Print a valid access token (refreshed when less than a minute is left)',
    client: true,
    load: async () => (await import('./client/token.js')).tokenCommand,
  },
  {
    path: ['whoami'],
    summary: "Show who is signed in (the user's claims)",
    client: true,
    load: async () => (await import('./client/whoami.js')).whoamiCommand,
  },
  {
    path: ['logout'],
    summary: 'Sign out: revoke the refresh token and delete the stored credentials',
    client: true,
    load: async () => (await import('./client/logout.js')).logoutCommand,
  },
  {
    path: ['status'],
    summary: 'Show every stored sign-in: issuer, account, token expiry, DPoP or not (--json for scripts)',
    client: true,
    load: async () => (await import('./client/status.js')).statusCommand,
  },
  {
    path: ['completion'],
    summary: 'Print a shell completion script (bash, zsh or fish)',
    client: true,
    load: async () => (await import('./completion.js')).completionCommand(commandIndex),
  },
  {
    path: ['credential', 'kubectl'],
    summary: "kubectl's exec credential plugin: prints an ExecCredential with the access token",
    client: true,
    load: async () => (await import('./client/credential_kubectl.js')).credentialKubectlCommand,
  },
  {
    path: ['credential', 'git'],
    summary: "Git's credential helper: the access token as the password for https remotes",
    client: true,
    load: async () => (await import('./client/credential_git.js')).credentialGitCommand,
  },
  {
    path: ['credential', 'docker'],
    summary: "Docker's credential helper: the access token as the password of the registries given with --host",
    client: true,
    load: async () => (await import('./client/credential_docker.js')).credentialDockerCommand,
  },
  { path: ['serve'], summary: 'Run the identity provider', client: false, load: async () => (await import('./commands/serve.js')).serveCommand },
  { path: ['users', 'add'], summary: 'Create a user', client: false, load: async () => (await import('./commands/users_add.js')).usersAddCommand },
  {
    path: ['users', 'update'],
    summary: "Change a user's email, name or profile claims",
    client: false,
    load: async () => (await import('./commands/users_update.js')).usersUpdateCommand,
  },
  { path: ['users', 'list'], summary: 'List users', client: false, load: async () => (await import('./commands/users_list.js')).usersListCommand },
  {
    path: ['users', 'disable'],
    summary: 'Disable a user: no more sign-ins; sessions, refresh tokens and access tokens end',
    client: false,
    load: async () => (await import('./commands/users_disable.js')).usersDisableCommand,
  },
  {
    path: ['users', 'enable'],
    summary: 'Enable a disabled user again (their old sign-ins stay ended)',
    client: false,
    load: async () => (await import('./commands/users_enable.js')).usersEnableCommand,
  },
  {
    path: ['users', 'passwd'],
    summary: "Set a user's password; every session and token of theirs ends",
    client: false,
    load: async () => (await import('./commands/users_passwd.js')).usersPasswdCommand,
  },
  {
    path: ['users', 'revoke-tokens'],
    summary: 'End every sign-in of a user: browser sessions, refresh tokens and access tokens',
    client: false,
    load: async () => (await import('./commands/users_revoke_tokens.js')).usersRevokeTokensCommand,
  },
  {
    path: ['users', 'mfa-enroll'],
    summary: 'Print a one-time link with which a user sets up their first second factor (what an admin needs)',
    client: false,
    load: async () => (await import('./commands/users_mfa_enroll.js')).usersMfaEnrollCommand,
  },
  {
    path: ['users', 'unlink'],
    summary: "Remove a user's linked upstream identity at a connector (that account can no longer sign in; their sign-ins end)",
    client: false,
    load: async () => (await import('./commands/users_unlink.js')).usersUnlinkCommand,
  },
  {
    path: ['users', 'mfa-reset'],
    summary: "Remove a user's second factors (authenticator app, passkeys, recovery codes)",
    client: false,
    load: async () => (await import('./commands/users_mfa_reset.js')).usersMfaResetCommand,
  },
  {
    path: ['users', 'grant'],
    summary: "Give a user a role (their next tokens carry the role's permissions; admin opens the console)",
    client: false,
    load: async () => (await import('./commands/users_roles.js')).usersGrantCommand,
  },
  {
    path: ['users', 'revoke'],
    summary: 'Take a role from a user (refreshed tokens carry less from then on)',
    client: false,
    load: async () => (await import('./commands/users_roles.js')).usersRevokeCommand,
  },
  {
    path: ['roles', 'add'],
    summary: 'Create a role: a set of API permissions to give people (users grant)',
    client: false,
    load: async () => (await import('./commands/roles.js')).rolesAddCommand,
  },
  {
    path: ['roles', 'update'],
    summary: "Replace a role's permissions or description",
    client: false,
    load: async () => (await import('./commands/roles.js')).rolesUpdateCommand,
  },
  {
    path: ['roles', 'list'],
    summary: 'List roles with their permissions and how many people hold them',
    client: false,
    load: async () => (await import('./commands/roles.js')).rolesListCommand,
  },
  {
    path: ['roles', 'remove'],
    summary: 'Remove a role (the people holding it lose it; their next tokens carry less)',
    client: false,
    load: async () => (await import('./commands/roles.js')).rolesRemoveCommand,
  },
  {
    path: ['sessions', 'list'],
    summary: 'List live sign-ins: browser sessions and devices or apps (refresh-token families)',
    client: false,
    load: async () => (await import('./commands/sessions_list.js')).sessionsListCommand,
  },
  {
    path: ['sessions', 'revoke'],
    summary: 'End one sign-in (a browser session, or a device or app) by its id',
    client: false,
    load: async () => (await import('./commands/sessions_revoke.js')).sessionsRevokeCommand,
  },
  {
    path: ['clients', 'add'],
    summary: 'Register a client application',
    client: false,
    load: async () => (await import('./commands/clients_add.js')).clientsAddCommand,
  },
  {
    path: ['clients', 'list'],
    summary: 'List client applications',
    client: false,
    load: async () => (await import('./commands/clients_list.js')).clientsListCommand,
  },
  {
    path: ['clients', 'remove'],
    summary: 'Remove a client application and everything issued to it (its access tokens stop working at once)',
    client: false,
    load: async () => (await import('./commands/clients_remove.js')).clientsRemoveCommand,
  },
  {
    path: ['clients', 'grant'],
    summary: 'Say which scopes of an API a machine client may ask for (client_credentials)',
    client: false,
    load: async () => (await import('./commands/clients_grant.js')).clientsGrantCommand,
  },
  {
    path: ['clients', 'rotate-secret'],
    summary: 'Give a confidential client a new secret (the old one can keep working for a while)',
    client: false,
    load: async () => (await import('./commands/clients_rotate_secret.js')).clientsRotateSecretCommand,
  },
  {
    path: ['clients', 'disable'],
    summary: 'Suspend a client: it cannot authenticate or start sign-ins, and its tokens are refused while it is disabled',
    client: false,
    load: async () => (await import('./commands/clients_disable.js')).clientsDisableCommand,
  },
  {
    path: ['clients', 'enable'],
    summary: 'Let a disabled client work again (its unexpired tokens work again too; remove a client to end them for good)',
    client: false,
    load: async () => (await import('./commands/clients_disable.js')).clientsEnableCommand,
  },
  {
    path: ['clients', 'registration-token'],
    summary: 'Print an initial access token that lets one client register itself (RFC 7591)',
    client: false,
    load: async () => (await import('./commands/clients_registration_token.js')).clientsRegistrationTokenCommand,
  },
  {
    path: ['connectors', 'add'],
    summary: 'Add an upstream identity provider people can sign in with (oidc, github, ldap)',
    client: false,
    load: async () => (await import('./commands/connectors_add.js')).connectorsAddCommand,
  },
  {
    path: ['connectors', 'list'],
    summary: 'List upstream identity providers',
    client: false,
    load: async () => (await import('./commands/connectors_list.js')).connectorsListCommand,
  },
  {
    path: ['connectors', 'remove'],
    summary: 'Remove an upstream identity provider (the users it created stay, signed out, and can no longer sign in through it)',
    client: false,
    load: async () => (await import('./commands/connectors_remove.js')).connectorsRemoveCommand,
  },
  {
    path: ['connectors', 'test'],
    summary: 'Check that an upstream identity provider works (discovery, keys, client; or the directory and its service account)',
    client: false,
    load: async () => (await import('./commands/connectors_test.js')).connectorsTestCommand,
  },
  {
    path: ['apis', 'add'],
    summary: 'Register an API (an audience tokens can be issued for)',
    client: false,
    load: async () => (await import('./commands/apis_add.js')).apisAddCommand,
  },
  {
    path: ['apis', 'update'],
    summary: "Change an API's name, its scopes or the clients that may introspect its tokens",
    client: false,
    load: async () => (await import('./commands/apis_update.js')).apisUpdateCommand,
  },
  { path: ['apis', 'list'], summary: 'List APIs', client: false, load: async () => (await import('./commands/apis_list.js')).apisListCommand },
  { path: ['apis', 'remove'], summary: 'Remove an API', client: false, load: async () => (await import('./commands/apis_remove.js')).apisRemoveCommand },
  {
    path: ['config', 'apply'],
    summary: 'Make the database hold what a configuration file declares (prints the plan; --dry-run, --prune)',
    client: false,
    load: async () => (await import('./commands/config_apply.js')).configApplyCommand,
  },
  {
    path: ['config', 'export'],
    summary: 'Print the APIs, roles, clients and connectors as a configuration file (secrets as references)',
    client: false,
    load: async () => (await import('./commands/config_export.js')).configExportCommand,
  },
  {
    path: ['config', 'schema'],
    summary: 'Print the JSON Schema of the configuration file',
    client: false,
    load: async () => (await import('./commands/config_schema.js')).configSchemaCommand,
  },
  {
    path: ['keys', 'list'],
    summary: 'List signing keys: the active one, and retired ones still published for verification',
    client: false,
    load: async () => (await import('./commands/keys_list.js')).keysListCommand,
  },
  {
    path: ['keys', 'rotate'],
    summary: 'Make new signing keys active now; old keys stay published until their tokens expire',
    client: false,
    load: async () => (await import('./commands/keys_rotate.js')).keysRotateCommand,
  },
  {
    path: ['secret-key', 'generate'],
    summary: 'Print a new random secret key (for LATCHKEY_SECRET_KEY)',
    client: false,
    load: async () => (await import('./commands/secret_key_generate.js')).secretKeyGenerateCommand,
  },
  {
    path: ['secret-key', 'rotate'],
    summary: 'Re-encrypt the stored server secrets under a new secret key',
    client: false,
    load: async () => (await import('./commands/secret_key_rotate.js')).secretKeyRotateCommand,
  },
  {
    path: ['config', 'show'],
    summary: 'Show every server setting in effect and where it came from: environment, file or default',
    client: false,
    load: async () => (await import('./commands/config_show.js')).configShowCommand,
  },
];
