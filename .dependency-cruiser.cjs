/**
 * Which folder of src/ may import which: the layering docs/architecture.md describes, checked by
 * `npm run lint:imports` (part of `npm test`). Type-only imports count like any other: a type
 * import is still a dependency of the code's meaning, and a layer that needs a type from above
 * has the type in the wrong place.
 *
 * Layers, top to bottom: cli → server/cluster → app → routes → console, grants and the domain
 * folders → oauth → crypto, limits, audit, net, i18n → store → the root leaves (clock, config,
 * errors, paths, version, deep_freeze).
 */
const domainFolders = '(account|audit|connectors|console|crypto|directory|grants|http|i18n|limits|mail|management|mfa|net|oauth|store)';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No module may depend on itself through others: a cycle hides which layer owns what, and breaks initialisation order.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'routes-only-from-the-app',
      comment:
        "A route file is a Fastify plugin, registered by src/app.ts (or, inside a route folder, by that folder's index.ts, the app of its folder). " +
        'What two routes share belongs in a domain folder (http/, console/, mail/, account/ …), never in a route file.',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/app[.]ts$', '^src/routes/[^/]+/index[.]ts$'] },
      to: { path: '^src/routes/' },
    },
    {
      name: 'route-folder-index-registers-its-own-folder',
      comment: "A route folder's index.ts registers the route plugins of its own folder only.",
      severity: 'error',
      from: { path: '^src/routes/([^/]+)/index[.]ts$' },
      to: { path: '^src/routes/', pathNot: '^src/routes/$1/' },
    },
    {
      name: 'domain-folders-never-import-routes-cli-or-the-server',
      comment: 'Domain folders are libraries: they never reach up to route plugins, the command line, the app or the server.',
      severity: 'error',
      from: { path: `^src/${domainFolders}/` },
      to: { path: ['^src/(routes|cli)/', '^src/(app|server|cluster|bootstrap|banner|housekeeping|prepare_database|startup_warnings)[.]ts$'] },
    },
    {
      name: 'cli-only-from-cli',
      comment: 'src/cli is the top of the program (argument parsing, exit codes): nothing but its own folder imports it.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/cli/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'store-is-the-bottom-layer',
      comment:
        'src/store holds SQL and the records it reads and writes; it imports nothing above it (only the root leaves: clock, config, paths, version, deep_freeze).',
      severity: 'error',
      from: { path: '^src/store/' },
      to: { path: '^src/', pathNot: ['^src/store/', '^src/(clock|config|deep_freeze|paths|version)[.]ts$'] },
    },
    {
      name: 'protocol-logic-without-http',
      comment:
        'oauth/, grants/ and the layers below them hold protocol and domain logic with no HTTP request or reply: http/ depends on them, never the reverse.',
      severity: 'error',
      from: { path: '^src/(oauth|grants|limits|crypto|directory|audit|net|store)/' },
      to: { path: '^src/http/' },
    },
    {
      name: 'oauth-without-fastify',
      comment: 'oauth/ is protocol logic (RFC 6749 and friends) with no Fastify types; the routes and http/ adapt it to requests.',
      severity: 'error',
      from: { path: '^src/oauth/' },
      to: { path: 'node_modules/fastify/' },
    },
    {
      name: 'limits-below-the-protocol',
      comment: 'The rate limiters count; they know nothing of the protocol, the directory or the pages that use them.',
      severity: 'error',
      from: { path: '^src/limits/' },
      to: { path: '^src/', pathNot: ['^src/limits/', '^src/store/', '^src/(clock|config)[.]ts$'] },
    },
    {
      name: 'core-oauth-not-on-the-directory-or-console',
      comment: "The protocol core decides by the records the store gives it; the directory's and the console's input rules sit above it.",
      severity: 'error',
      from: { path: '^src/(oauth|grants)/' },
      to: { path: '^src/(directory|console|account|connectors)/' },
    },
    {
      name: 'self-service-without-admin-errors',
      comment:
        "A person's own account pages check input through account/self_service_input.ts, which answers with a result: they never handle the directory's AdminInputError themselves.",
      severity: 'error',
      from: { path: '^src/routes/(account|account_security|password_reset)[.]ts$' },
      to: { path: '^src/directory/validation[.]ts$' },
    },
    {
      name: 'src-never-imports-tests-or-bench',
      comment: 'The shipped code never depends on the tests or the benchmark.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/bench/' },
      to: { path: ['^test/', '^bench/', '^src/bench/'] },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'An import the checker cannot resolve would escape every rule above.',
      severity: 'error',
      from: { path: '^src/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    reporterOptions: {
      text: { highlightFocused: true },
    },
  },
};
