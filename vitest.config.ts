import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    alias: {
      'chainkit/redis': fileURLToPath(new URL('./src/redis/index.ts', import.meta.url)),
      'chainkit/sqlite': fileURLToPath(new URL('./src/sqlite/index.ts', import.meta.url)),
      'chainkit/testing': fileURLToPath(new URL('./src/testing/index.ts', import.meta.url)),
      chainkit: fileURLToPath(new URL('./src/index.ts', import.meta.url)),
    },
  },
  test: {
    include: ['test/**/*.test.ts', 'examples/**/*.test.ts'],
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'] },
    testTimeout: 20_000,
  },
});
