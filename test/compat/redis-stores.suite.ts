// The Redis store behaviours across processes (checkpoints taken once, idempotency, limits, learning,
// breakers), as a suite run with each supported ioredis major: test/redis/stores.test.ts (ioredis 5)
// and test/compat/ioredis-6.test.ts (ioredis 6). Real Redis on 127.0.0.1:6379 (.ci/run starts one);
// every key lives under the run's own prefix.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { bundledWorker } from '../fixtures/bundled.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AbortScope, createRunner, findAndDelete, taskTools } from 'chainkit';
import { redisLimiterStore, redisStores } from 'chainkit/redis';
import { addOne, flaky, TASK, workerInvoker } from '../fixtures/redis-worker.js';
import type { SuiteClient, SuiteOptions } from './redis-client.js';

const worker = bundledWorker('redis-worker'); // bundled by test/global-setup.ts: starts 3× faster than under tsx

/** Registers the cross-process store tests for one client (each process, workers included, uses it). */
export function redisStoresSuite({ label, client, workerNodeArgs = [] }: SuiteOptions): void {
  const prefix = `chainkit-test:${label}:${process.pid}:${Date.now()}`;
  const secret = 'a-secret-shared-by-all-processes';
  let redis: SuiteClient;
  const started: ChildProcessWithoutNullStreams[] = [];

  interface Worker {
    child: ChildProcessWithoutNullStreams;
    ready: Promise<void>;
    token: Promise<string>;
    result: Promise<Record<string, unknown>>;
  }

  function startWorker(job: Record<string, unknown>): Worker {
    const child = spawn(process.execPath, [...workerNodeArgs, worker, JSON.stringify({ prefix, secret, ...job })], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    started.push(child);
    let out = '';
    let err = '';
    let markReady: () => void = () => {};
    let gotToken: (t: string) => void = () => {};
    const ready = new Promise<void>((r) => {
      markReady = r;
    });
    const token = new Promise<string>((r) => {
      gotToken = r;
    });
    child.stdout.on('data', (d: Buffer) => {
      out += d;
      if (out.includes('ready\n')) markReady();
      const t = /^token (\S+)$/m.exec(out);
      if (t) gotToken(t[1]!);
    });
    child.stderr.on('data', (d: Buffer) => (err += d));
    const result = new Promise<Record<string, unknown>>((resolve, reject) => {
      child.on('exit', (code) => {
        const last = out.trim().split('\n').at(-1) ?? '';
        if (code === 0 && last.startsWith('{')) resolve(JSON.parse(last));
        else reject(new Error(`worker exited ${code}: ${err || out}`));
      });
    });
    return { child, ready, token, result };
  }
  const go = (w: Worker): void => {
    w.child.stdin.write('go\n');
  };

  function localRunner() {
    const invoker = workerInvoker();
    return {
      invoker,
      runner: createRunner({
        invoker,
        tools: [...taskTools, flaky],
        chains: [findAndDelete, addOne],
        secret,
        stores: redisStores(redis, { prefix }),
      }),
    };
  }

  describe(`chainkit/redis across processes (${label})`, () => {
    beforeAll(async () => {
      redis = client();
      await redis.connect();
    });
    afterAll(async () => {
      for (const child of started) if (child.exitCode === null) child.kill('SIGKILL'); // a timed-out test leaves no process behind
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length) await redis.del(...keys);
      redis.disconnect();
    });

    it('a token issued in process A, resumed concurrently in A, B and C, deletes exactly once', async () => {
      // Every process runs the same build, as replicas do: the definition fingerprint matches.
      const a = startWorker({ kind: 'issue-and-resume' });
      await a.ready;
      go(a);
      const token = await a.token;
      expect(token).toMatch(/\./);
      const others = [0, 1].map(() => startWorker({ kind: 'resume', token }));
      await Promise.all(others.map((w) => w.ready));
      const resumers = [a, ...others];
      resumers.forEach(go); // A, B and C resume at once
      const results = await Promise.all(resumers.map((w) => w.result));
      const outcomes = results.map((r) => r.code ?? r.status);
      expect(
        outcomes.filter((s) => s === 'completed'),
        JSON.stringify(results),
      ).toHaveLength(1);
      expect(outcomes.filter((s) => s === 'already_used')).toHaveLength(2);
      expect(results.flatMap((r) => r.calls as string[]).filter((t) => t === 'delete_task')).toHaveLength(1);
    }, 30_000);

    it('the same runId on two processes performs the side effect once; both get its result', async () => {
      const runId = `req-${Date.now()}`;
      const b = startWorker({ kind: 'add', runId });
      const c = startWorker({ kind: 'add', runId });
      await Promise.all([b.ready, c.ready]);
      go(b);
      go(c);
      const [inB, inC] = await Promise.all([b.result, c.result]);
      expect([inB.status, inC.status]).toEqual(['completed', 'completed']);
      expect(inB.output).toEqual(inC.output);
      const adds = [inB, inC].flatMap((r) => r.calls as string[]).filter((t) => t === 'add_task');
      expect(adds).toHaveLength(1);
      expect([inB.cached, inC.cached].filter(Boolean)).toHaveLength(1);
    }, 30_000);

    it('a durable run id on two processes at once: the side effect once; the other is refused (run_in_progress) or gets the recorded result', async () => {
      const runId = `dreq-${Date.now()}`;
      // A title of its own: add_task's content key would otherwise find the other test's kept result.
      const b = startWorker({ kind: 'add', runId, durable: true, title: runId });
      const c = startWorker({ kind: 'add', runId, durable: true, title: runId });
      await Promise.all([b.ready, c.ready]);
      go(b);
      go(c);
      const results = await Promise.all([b.result, c.result]);
      const adds = results.flatMap((r) => r.calls as string[]).filter((t) => t === 'add_task');
      expect(adds).toHaveLength(1);
      expect(results.filter((r) => r.status === 'completed').length).toBeGreaterThanOrEqual(1);
      for (const r of results) if (r.status !== 'completed') expect(r.code).toBe('run_in_progress');
    }, 30_000);

    it('a per-user limit of 20 per second holds across 3 processes firing 60 calls', async () => {
      const workers = [0, 1, 2].map(() => startWorker({ kind: 'limited' }));
      await Promise.all(workers.map((w) => w.ready));
      workers.forEach(go);
      const starts = (await Promise.all(workers.map((w) => w.result))).flatMap((r) => r.starts as number[]);
      expect(starts).toHaveLength(60);
      expect(starts.every((s) => typeof s === 'number')).toBe(true); // all 60 completed
      starts.sort((x, y) => x - y);
      // 60 calls at 20 per window need 3 windows: without sharing, all would start at once.
      expect(starts[59]! - starts[0]!).toBeGreaterThanOrEqual(1900);
      expect(starts[59]! - starts[0]!).toBeLessThan(4000); // …and the windows follow each other
      // Fixed windows allow at most 2 × 20 starts inside any sliding second, and never all 60.
      for (let i = 0; i < 60; i++)
        expect(starts.filter((s) => s >= starts[i]! && s < starts[i]! + 1000).length).toBeLessThanOrEqual(40);
    }, 40_000);

    it('a per-user limit keys each user under its tool, whatever the user id holds', async () => {
      const store = redisLimiterStore(redis, { prefix: `${prefix}:users` });
      const spec = { limit: 1, intervalMs: 60_000, per: 'user' as const };
      const scope = new AbortScope();
      const slots = await Promise.all(
        ['org:1', 'org:2'].map((user) =>
          store.limiter('chainkit:limited', spec, user).acquire(scope, Date.now() + 5000),
        ),
      );
      expect(slots.every((s) => typeof s === 'function')).toBe(true); // one slot each: the users do not share a limit
      for (const release of slots) (release as () => void)();
      const keys = await redis.keys(`${prefix}:users:*`);
      expect(keys.map((k) => k.slice(`${prefix}:users:`.length)).sort()).toEqual([
        'chainkit:limited:org:1:w:60000',
        'chainkit:limited:org:2:w:60000',
      ]);
      await store.close!();
    });

    it('what one process learned is visible to a new one', async () => {
      const writer = startWorker({ kind: 'learn' });
      await writer.ready;
      go(writer);
      const { learned } = (await writer.result) as { learned: number }; // what it loaded plus its 12 calls
      expect(learned).toBeGreaterThanOrEqual(12);
      const fresh = localRunner();
      expect(fresh.runner.timing.estimate('list_tasks').samples).toBe(0);
      await fresh.runner.ready;
      expect(fresh.runner.timing.estimate('list_tasks')).toMatchObject({ samples: learned, confidence: 'medium' });
      expect(fresh.runner.metrics.transitionsFrom('list_tasks').complete_task).toMatchObject({
        count: 12,
        successRate: 1,
      });
      expect(fresh.runner.suggest('list_tasks').nextTools.map((s) => s.tool)).toContain('complete_task');
      await fresh.runner.close();
    }, 30_000);

    it('a breaker opened by failures in A makes B fail fast', async () => {
      const a = localRunner();
      for (let i = 0; i < 5; i++) expect((await a.runner.invoke('flaky', {})).status).toBe('failed');
      const b = startWorker({ kind: 'breaker' });
      await b.ready;
      go(b);
      const inB = await b.result;
      expect(inB).toMatchObject({ status: 'failed', category: 'circuit_open', calls: [] });
      await a.runner.close();
    }, 30_000);

    it('a checkpoint is taken at most once even when resumed with a wrong context first', async () => {
      const a = localRunner();
      const gate = await a.runner.run(findAndDelete, { match: 'groceries' }, { context: { userId: TASK.user_id } });
      if (gate.status !== 'awaiting_confirmation') throw new Error(gate.status);
      const wrong = await a.runner.resume(
        gate.resumeToken,
        { approved: true },
        { context: { userId: '0b9a8c7d-6e5f-4a3b-9c2d-1e0f9a8b7c6d' } },
      );
      expect(wrong.status === 'failed' && wrong.error.code).toBe('context_mismatch');
      expect(
        (await a.runner.resume(gate.resumeToken, { approved: true }, { context: { userId: TASK.user_id } })).status,
      ).toBe('completed');
      const again = await a.runner.resume(gate.resumeToken, { approved: true }, { context: { userId: TASK.user_id } });
      expect(again.status === 'failed' && again.error.code).toBe('already_used');
      await a.runner.close();
    });
  });
}
