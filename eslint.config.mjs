// ESLint (flat config, `npm run lint`) with typescript-eslint: the recommended rules of both, and only
// these departures, each for a reason the code base holds to on purpose:
// - `no-explicit-any` off: wire JSON (request bodies, upstream events) is read as `any` at the edges and
//   checked field by field there (middleware/validate-body.ts, the translators), which the rule would only
//   turn into casts;
// - unused names starting with `_` are allowed: Express error handlers need their four parameters, and a
//   destructured `_field` drops a field from a rest object;
// - `no-undef` off for TypeScript (the compiler checks names; typescript-eslint's advice); the browser
//   and Node scripts in plain JS get their globals declared instead;
// - in specs: `require()` (fresh module copies, JSON fixtures) and chai's property assertions
//   (`.to.be.true`) are allowed.
// Unused `eslint-disable` comments are not reported: older comments name `no-var-requires`, the rule
// `no-require-imports` replaced.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', '**/node_modules/', 'coverage/'] },
  { linterOptions: { reportUnusedDisableDirectives: 'off' } },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', {
        argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true,
      }],
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  { files: ['**/*.ts'], rules: { 'no-undef': 'off' } },
  {
    files: ['spec/**/*.ts'],
    rules: { '@typescript-eslint/no-require-imports': 'off', '@typescript-eslint/no-unused-expressions': 'off' },
  },
  { files: ['dashboard/**/*.js'], languageOptions: { globals: globals.browser } },
  {
    files: ['spec/clients/*.js'],
    languageOptions: { sourceType: 'commonjs', globals: globals.node },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
