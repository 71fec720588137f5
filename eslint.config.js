import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'coverage/**',
      '.tmp/**',
      '**/*.generated.ts',
      'test/compat/*/dist/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { module: 'writable', require: 'readonly' },
    },
  },
  {
    files: ['sample/sandbox/public/**/*.js'],
    languageOptions: {
      globals: Object.fromEntries(
        [
          'window',
          'document',
          'fetch',
          'performance',
          'requestAnimationFrame',
          'ResizeObserver',
          'HTMLElement',
          'HTMLButtonElement',
          'HTMLFormElement',
          'HTMLInputElement',
          'HTMLOListElement',
          'HTMLSelectElement',
        ].map((name) => [name, 'readonly']),
      ),
    },
  },
);
