import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'testing/index': 'src/testing/index.ts',
    'stores/index': 'src/stores/index.ts',
    'redis/index': 'src/redis/index.ts',
    'sqlite/index': 'src/sqlite/index.ts',
    'mcp/index': 'src/mcp/index.ts',
    'ai/index': 'src/ai/index.ts',
    'openai-agents/index': 'src/openai-agents/index.ts',
    'otel/index': 'src/otel/index.ts',
    'postgres/index': 'src/postgres/index.ts',
    'sse/index': 'src/sse/index.ts',
    'inspector/index': 'src/inspector/index.ts',
  },
  format: ['esm'],
  target: 'node20',
  dts: true,
  clean: true,
  sourcemap: true,
  splitting: true,
});
