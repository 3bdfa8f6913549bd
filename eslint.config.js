// @ts-check
/**
 * ESLint over the TypeScript of src/, test/, scripts/ and the benchmarks: typescript-eslint's strict
 * type-checked rules, each file read with the types of the tsconfig that holds it (projectService),
 * and eslint-config-prettier last so that no rule argues with the formatter. `npm run lint` allows
 * no warning. Where a rule is tuned below, the line says why.
 */
import { fileURLToPath } from 'node:url';
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default defineConfig(
  // Built output, data and what is not our TypeScript (pages, their browser script, fixtures made by older builds).
  globalIgnores(['dist/', 'dist-bench/', 'coverage/', 'data/', 'docs/', 'migrations/', 'views/', 'test/fixtures/upgrade/*/']),
  {
    files: ['**/*.ts'],
    extends: [js.configs.recommended, tseslint.configs.strictTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: fileURLToPath(new URL('.', import.meta.url)) },
    },
    rules: {
      // Counts, ports and seconds read naturally in messages; objects, undefined and the like stay refused.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      // `(x) => void promise` and `() => stream.write(…)` one-liners: the arrow's value is visibly unused.
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
      // Fastify plugins and the methods of promise-returning interfaces (Store verbs, adapters) are async
      // without awaiting: that is how they return a promise, and how a throw in them becomes a rejection.
      '@typescript-eslint/require-await': 'off',
      // `const { secret: _secret, ...shown } = record` leaves a field out: the rest is what is used.
      '@typescript-eslint/no-unused-vars': ['error', { varsIgnorePattern: '^_', argsIgnorePattern: '^_', ignoreRestSiblings: true }],
      // Claims and the credentials file are JSON objects, stored and sent as such (a Map would not be):
      // removing one member by name is what `delete` is for.
      '@typescript-eslint/no-dynamic-delete': 'off',
      // A caught value passed on as a rejection is as the callee threw it (only-throw-error allows the same rethrow).
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
      // Matching control characters is the point where they appear: input that carries them is refused
      // (headers, claims, form fields) and terminal output shows them as escapes.
      'no-control-regex': 'off',
      // openid-client marks these "deprecated" only so that each use stands out; ours are deliberate: an
      // http:// issuer someone configured (warned about) or a test runs, and userinfo read only for display.
      '@typescript-eslint/no-deprecated': ['error', { allow: ['allowInsecureRequests', 'skipSubjectCheck'] }],
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // A test asserts what it expects before indexing into it; a `!` there is that expectation, and a wrong one fails the test.
      '@typescript-eslint/no-non-null-assertion': 'off',
      // Tests read the JSON they are answered (app.inject's json() and JSON.parse are `any`) and hold it to
      // exact expectations: a wrong shape fails the assertion, which is what these rules would guard.
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // `afterAll(() => server?.stop())`: a teardown guards what a failed beforeAll never assigned, which the
      // variable's declared type cannot say.
      '@typescript-eslint/no-unnecessary-condition': 'off',
    },
  },
  {
    // This file: plain JavaScript, outside every tsconfig.
    files: ['**/*.js'],
    extends: [js.configs.recommended],
    languageOptions: { globals: { URL: 'readonly' } },
  },
  prettier,
);
