import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sqlite from 'node-sqlite3-wasm'; // CommonJS: no named exports under Node's ESM loader
import { afterAll, describe, expect, it } from 'vitest';
import { createRunner, listTasks, updateTask } from 'chainkit';
import { sqliteLearningStore } from 'chainkit/sqlite';

const dir = mkdtempSync(join(tmpdir(), 'chainkit-sqlite-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const worker = fileURLToPath(new URL('../fixtures/sqlite-worker.ts', import.meta.url));

describe('chainkit/sqlite', () => {
  it('what one process learned survives into a new one', async () => {
    const file = join(dir, 'learning.db');
    const run = spawnSync(process.execPath, ['--import', 'tsx', worker, file], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout.trim())).toEqual({ samples: 15 });
    const db = new sqlite.Database(file);
    const runner = createRunner({
      invoker: async () => ({}),
      tools: [listTasks, updateTask],
      stores: { metrics: sqliteLearningStore(db) },
    });
    expect(runner.timing.estimate('list_tasks').samples).toBe(0);
    await runner.ready;
    expect(runner.timing.estimate('list_tasks')).toMatchObject({ samples: 15, confidence: 'medium' });
    expect(runner.metrics.transitionsFrom('list_tasks').update_task).toMatchObject({ count: 15, successRate: 1 });
    await runner.close();
    db.close(); // the app's database: the store leaves it open
  }, 30_000);

  it('stays bounded on disk', () => {
    const db = new sqlite.Database(join(dir, 'bounded.db'));
    const store = sqliteLearningStore(db, { maxTransitions: 5, maxSamples: 7 });
    for (let i = 0; i < 4; i++) {
      store.append({
        transitions: Array.from({ length: 3 }, (_, j) => ({
          fromTool: 'a',
          toTool: 'b',
          sessionId: `s${i}`,
          success: true,
          timestamp: i * 10 + j,
          gapMs: 1,
        })),
        samples: Array.from({ length: 4 }, (_, j) => ({ tool: 'a', durationMs: i * 10 + j, complexity: 1 })),
      });
    }
    const data = store.load() as { transitions: { timestamp: number }[]; samples: { durationMs: number }[] };
    expect(data.transitions.map((t) => t.timestamp)).toEqual([21, 22, 30, 31, 32]); // the newest 5 of 12
    expect(data.samples.map((s) => s.durationMs)).toEqual([21, 22, 23, 30, 31, 32, 33]); // the newest 7 of 16
    store.close?.();
    db.close();
  });
});
