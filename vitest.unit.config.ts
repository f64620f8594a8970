// `npm run test:unit`: the edit loop. Every test that needs no service — no Redis, no PostgreSQL, no
// child process, no browser, no build — in well under a minute. `npm test` stays the whole suite.
// A test file that starts a service or a process belongs in SERVICES below.
import { availableParallelism } from 'node:os';
import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.js';

const SERVICES = [
  'test/redis/**', // Redis
  'test/postgres/**', // PostgreSQL
  'test/durable/**', // Redis, PostgreSQL and killed worker processes
  'test/runtimes/**', // Bun, Deno, workerd, and dist/
  'test/inspector/**', // a browser
  'test/compat/ioredis-6.test.ts', // Redis
  'test/compat/pg-types.test.ts', // installs and compiles an app
  'test/compat/zod-copies.test.ts', // child processes
  'test/compat/ai-v7.test.ts', // installs and compiles an app
  'test/policies/idempotency-record-bound.test.ts', // Redis
  'test/policies/idempotency-stores.test.ts', // Redis and PostgreSQL
  'test/stores/checkpoints.test.ts', // Redis
  'test/mcp/client.test.ts', // a stdio server process
  'test/mcp/server.test.ts', // a stdio server process
  'test/ai/ai-sdk.test.ts', // a child process
  'test/define/type-messages.test.ts', // tsc in a child process
  'test/run/exit.test.ts', // child processes
  'test/sqlite/learning.test.ts', // child processes
  'test/stores/run-lifecycle.test.ts', // memory, Redis and PostgreSQL
  'test/stores/cancel-dead-owner.test.ts', // Redis, PostgreSQL and killed worker processes
  'test/run/rerun-stores.test.ts', // Redis and PostgreSQL
  'test/flow/durable-for-each-stores.test.ts', // Redis and PostgreSQL
];

const unit = mergeConfig(
  base,
  defineConfig({
    test: {
      exclude: [...SERVICES, '**/node_modules/**'],
      typecheck: { enabled: false }, // the type tests compile against dist/: `npm test` builds it first
      // One worker more than the cores (vitest's default is one fewer): many of these tests wait on real
      // timers, and on a 2-core machine a single worker left the other core idle (91 s against 44 s here).
      maxWorkers: availableParallelism() + 1,
    },
  }),
);
// No worker process is forked here: nothing to bundle (mergeConfig would concatenate the arrays).
unit.test!.globalSetup = [];
export default unit;
