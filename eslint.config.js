// ESLint: a small, type-aware rule set (deprecated APIs, unhandled promises). No formatting rules.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'docs/**',
      'node_modules/**',
      'coverage/**',
      '.bench/**',
      'bench/types/generated/**',
      '.tmp-*/**',
    ],
  },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      // Type information is what lets no-deprecated see `@deprecated` on methods, e.g. zod's `z.string().email()`.
      // One program for every file (the root tsconfig), not the nearest tsconfig: bench/types' one is empty until generated.
      parserOptions: { project: './tsconfig.json', tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    // Unused variables are tsc's job (noUnusedLocals); disable comments for rules not enabled here are left alone.
    linterOptions: { reportUnusedDisableDirectives: 'off' },
    rules: {
      '@typescript-eslint/no-deprecated': 'error',
      'no-debugger': 'error',
    },
  },
  {
    // The library itself: a promise nobody awaits is an unhandled rejection in the user's process.
    files: ['src/**/*.ts'],
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
    },
  },
  {
    // The inspector's page runs in a browser: its own program (DOM types), excluded from the root one.
    files: ['src/inspector/page/**/*.ts'],
    languageOptions: {
      parserOptions: { project: './src/inspector/page/tsconfig.json', tsconfigRootDir: import.meta.dirname },
    },
  },
);
