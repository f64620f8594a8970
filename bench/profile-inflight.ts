// What 10,000 find-and-update chains hold in flight, chainkit against run.ts's hand-written loop (a retry loop and a
// timeout race, zod in and out), not part of `npm run bench`:
//   npx tsup bench/profile-inflight.ts --no-config --format esm --target node20 --out-dir .bench --silent
//   WHICH=base|chainkit AT=1 node --expose-gc .bench/profile-inflight.js
// Prints the heap AT ms after every chain started (after a GC) and once their results are all held;
// SNAP=file.heapsnapshot writes a heap snapshot at the first point.
import { setTimeout as sleep } from 'node:timers/promises';
import { createRunner, functionInvoker, listTasks, updateTask } from '../src/index.js';
import { plainKit } from './current-retry.js';
import { chain, list, parse, slow, update, USER } from './fixture.js';
async function baseline(): Promise<unknown> {
  const call = (fn: () => unknown, ms: number) =>
    plainKit.pRetry(() => plainKit.pTimeout(Promise.resolve(fn()), { milliseconds: ms }), {
      retries: 3,
      minTimeout: 100,
    });
  parse(listTasks.input, { user_id: USER, status: 'all' }); // checked as run.ts's loop does; the fake ignores it
  const l = parse(listTasks.output, await call(() => slow.list_tasks(), 3000));
  const found = l.tasks.filter((t) => t.title.toLowerCase().includes('dentist'));
  const updIn = parse(updateTask.input, { user_id: USER, task_id: found[0]!.task_id, title: 'x' });
  return parse(updateTask.output, await call(() => slow.update_task(updIn), 3000));
}
const runner = createRunner({ invoker: functionInvoker(slow), tools: [list, update] });
runner.events.on('step:end', () => {});
runner.events.on('chain:end', () => {});
const ck = () => runner.run(chain, { match: 'dentist', title: 'x' }, { context: { userId: USER } });
const one = process.env.WHICH === 'base' ? baseline : ck;
await Promise.all(Array.from({ length: 1000 }, one));
globalThis.gc!();
globalThis.gc!();
const h0 = process.memoryUsage().heapUsed;
const all = Array.from({ length: 10_000 }, one);
const at = Number(process.env.AT ?? 1);
await sleep(at);
globalThis.gc!();
const inflight = process.memoryUsage().heapUsed - h0;
if (process.env.SNAP) (await import('node:v8')).writeHeapSnapshot(process.env.SNAP);
const res = await Promise.all(all);
globalThis.gc!();
const withResults = process.memoryUsage().heapUsed - h0;
console.log(
  process.env.WHICH ?? 'chainkit',
  `in flight (after ${at} ms) ${(inflight / 1048576).toFixed(1)} MB; results held ${(withResults / 1048576).toFixed(1)} MB`,
  `(${res.length} results)`,
);
await runner.close();
