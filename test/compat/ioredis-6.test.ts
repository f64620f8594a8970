// chainkit/redis with ioredis 6 (devDependency `ioredis-6`, an npm alias of ioredis@^6): the same store
// suites as ioredis 5 (test/redis/), with every worker process on ioredis 6 too. Real Redis on 127.0.0.1:6379.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import Redis from 'ioredis-6';
import { describe, expect, it } from 'vitest';
import { redisIdempotencySuite } from './redis-idempotency.suite.js';
import { redisStoresSuite } from './redis-stores.suite.js';

const alias = fileURLToPath(new URL('./ioredis-6-alias.mjs', import.meta.url));
const client = () => new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true, maxRetriesPerRequest: 1 });

const root = fileURLToPath(new URL('../..', import.meta.url));
const tsc = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));

describe('chainkit/redis on ioredis 6 types', () => {
  it("src/redis type-checks with 'ioredis' resolved to ioredis 6, and takes its clients (test/compat/ioredis-6-types.ts)", async () => {
    const out = await new Promise<string>((resolve) =>
      execFile(
        process.execPath,
        [tsc, '-p', 'test/compat/ioredis-6/tsconfig.json', '--pretty', 'false'],
        { cwd: root },
        (error, stdout, stderr) => resolve(`${error ? `exit ${error.code}\n` : ''}${stdout}${stderr}`),
      ),
    );
    expect(out).toBe('');
  }, 60_000);
});

describe('the worker processes run on ioredis 6', () => {
  it("resolves 'ioredis' to ioredis 6 under the alias hook", async () => {
    const script =
      "const { default: Redis } = await import('ioredis'); console.log(import.meta.resolve('ioredis'), typeof Redis);";
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ['--import', alias, '--input-type=module', '-e', script],
        { cwd: root },
        (error, stdout) => (error ? reject(error) : resolve(stdout.trim())),
      ),
    );
    expect(out).toMatch(/\/node_modules\/ioredis-6\/built\/index\.js function$/);
  });
});

redisStoresSuite({ label: 'ioredis-6', client, workerNodeArgs: ['--import', alias] });
redisIdempotencySuite({ label: 'ioredis-6', client });
