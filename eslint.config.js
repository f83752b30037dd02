// The TypeScript linter (`npm run lint`, run by `npm test`): typescript-eslint's recommended rules
// for correctness, and @stylistic's rules for the style this code base is written in, so style
// is checked, not argued. C++ has .clang-format (scripts/lint-cpp.js).
'use strict';
const tseslint = require('typescript-eslint');
const stylistic = require('@stylistic/eslint-plugin');

module.exports = tseslint.config(
  { ignores: ['lib/**', 'build*/**', 'dist/**', 'node_modules/**', 'packages/**', 'coverage/**', '.tmp/**'] },
  {
    files: ['ts/**/*.ts', 'test/**/*.ts'],
    extends: [tseslint.configs.recommended],
    plugins: { '@stylistic': stylistic },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', caughtErrors: 'none' }],
      '@stylistic/indent': ['error', 2, {
        SwitchCase: 1, flatTernaryExpressions: true,
        ignoredNodes: ['TSUnionType', 'TSIntersectionType', 'TSConditionalType', 'TSConditionalType *', 'ConditionalExpression', 'ConditionalExpression *'],
      }],
      '@stylistic/quotes': ['error', 'single', { avoidEscape: true, allowTemplateLiterals: 'always' }],
      '@stylistic/semi': ['error', 'always'],
      '@stylistic/comma-dangle': ['error', 'always-multiline'],
      '@stylistic/eol-last': 'error',
      '@stylistic/no-trailing-spaces': 'error',
      '@stylistic/no-multiple-empty-lines': ['error', { max: 1, maxEOF: 0 }],
      '@stylistic/brace-style': ['error', '1tbs', { allowSingleLine: true }],
      '@stylistic/keyword-spacing': 'error',
      '@stylistic/space-infix-ops': 'error',
      '@stylistic/object-curly-spacing': ['error', 'always'],
      '@stylistic/arrow-parens': ['error', 'always'],
      '@stylistic/max-len': ['error', { code: 160, ignoreUrls: true, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreComments: false }],
    },
  },
  {
    // Tests read JSON bodies and protocol messages whose shape the assertions check.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Type tests: values declared for their types, expressions that must (not) compile.
    files: ['test/types/*.test-d.ts'],
    rules: { '@typescript-eslint/no-unused-vars': 'off', '@typescript-eslint/no-unused-expressions': 'off' },
  },
);
