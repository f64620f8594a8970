// Shared by the kill tests and the soak: forks durable workers, reads the ledger, cleans up.
import { fork, type ChildProcess } from 'node:child_process';
import Redis from 'ioredis';
import pg from 'pg';
import { bundledWorker } from '../fixtures/bundled.js';
import type { WorkerJob } from '../fixtures/durable-worker.js';

// Bundled by the global setup (test/global-setup.ts): a worker starts 3× faster than under tsx.
const script = bundledWorker('durable-worker');

export type Msg = {
  type: string;
  runId?: string;
  status?: string;
  code?: string;
  runIds?: string[];
  statuses?: string[];
  pid?: number;
  /** A run parked `waiting`: when it is due (epoch ms). */
  until?: number;
};

/** One worker process: its messages, and a way to wait for one. */
export class Worker {
  readonly messages: Msg[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly child: ChildProcess;
  private waiters: (() => void)[] = [];
  stderr = '';

  constructor(job: WorkerJob) {
    this.child = fork(script, [JSON.stringify(job)], {
      execArgv: [],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    this.child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
    this.child.on('message', (m: Msg) => {
      this.messages.push(m);
      for (const w of this.waiters.splice(0)) w();
    });
    this.exited = new Promise((resolve) =>
      this.child.on('exit', (code, signal) => {
        resolve({ code, signal });
        for (const w of this.waiters.splice(0)) w();
      }),
    );
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Resolves with the first message that matches, or fails when the worker exits or time runs out. */
  async waitFor(match: (m: Msg) => boolean, timeoutMs = 30_000): Promise<Msg> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const found = this.messages.find(match);
      if (found) return found;
      if (!this.alive) throw new Error(`worker exited before the awaited message; stderr:\n${this.stderr}`);
      if (Date.now() > until)
        throw new Error(`timed out; messages: ${JSON.stringify(this.messages)}; stderr:\n${this.stderr}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, 200);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  kill(): Promise<unknown> {
    if (this.alive) this.child.kill('SIGKILL');
    return this.exited;
  }

  async stop(): Promise<void> {
    if (!this.alive) return;
    this.child.send({ type: 'stop' });
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await this.exited;
    clearTimeout(timer);
  }
}

/** Reads and clears the ledger and the store of one test namespace. */
export class Ledger {
  readonly redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true });
  readonly pool = new pg.Pool({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test', max: 2 });

  async count(key: string): Promise<number> {
    return Number((await this.redis.get(key)) ?? 0);
  }

  /** Effects applied per logical step of a run (`effect:<runId>:<step>`). */
  async effects(ns: string): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    const keys = await this.redis.keys(`${ns}:ledger:effect:*`);
    for (const k of keys) out.set(k.slice(`${ns}:ledger:effect:`.length), await this.count(k));
    return out;
  }

  async clean(ns: string): Promise<void> {
    const keys = await this.redis.keys(`${ns}*`);
    if (keys.length > 0) await this.redis.del(...keys);
    await this.pool.query(`DROP SCHEMA IF EXISTS "${ns}" CASCADE`);
  }

  async close(): Promise<void> {
    this.redis.disconnect();
    await this.pool.end();
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
