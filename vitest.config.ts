import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    alias: {
      'chainkit/mcp': fileURLToPath(new URL('./src/mcp/index.ts', import.meta.url)),
      'chainkit/otel': fileURLToPath(new URL('./src/otel/index.ts', import.meta.url)),
      'chainkit/ai': fileURLToPath(new URL('./src/ai/index.ts', import.meta.url)),
      'chainkit/openai-agents': fileURLToPath(new URL('./src/openai-agents/index.ts', import.meta.url)),
      'chainkit/redis': fileURLToPath(new URL('./src/redis/index.ts', import.meta.url)),
      'chainkit/postgres': fileURLToPath(new URL('./src/postgres/index.ts', import.meta.url)),
      'chainkit/sqlite': fileURLToPath(new URL('./src/sqlite/index.ts', import.meta.url)),
      'chainkit/sse': fileURLToPath(new URL('./src/sse/index.ts', import.meta.url)),
      'chainkit/inspector': fileURLToPath(new URL('./src/inspector/index.ts', import.meta.url)),
      'chainkit/stores': fileURLToPath(new URL('./src/stores/index.ts', import.meta.url)),
      'chainkit/testing': fileURLToPath(new URL('./src/testing/index.ts', import.meta.url)),
      chainkit: fileURLToPath(new URL('./src/index.ts', import.meta.url)),
    },
  },
  test: {
    include: ['test/**/*.test.ts', 'examples/**/*.test.ts'],
    // Type tests compile against the built declarations (dist/*.d.ts), as a user's app does; `npm test` builds first.
    typecheck: { enabled: true, include: ['test/types/**/*.test-d.ts'], tsconfig: './test/types/tsconfig.json' },
    testTimeout: 20_000,
    globalSetup: ['test/global-setup.ts'],
  },
});
