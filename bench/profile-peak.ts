// The 10,000-chain load of run.ts in one process, to see where its peak heap goes (not part of `npm run bench`):
//   npx tsup bench/profile-peak.ts --no-config --format esm --target node20 --out-dir .bench --silent && node --expose-gc .bench/profile-peak.js
// Prints the peak above the start, what the results hold once all resolved (after a GC), and the heap without them.
import { setTimeout as sleep } from 'node:timers/promises';
import { createRunner, defineChain, defineTool, findAndUpdate, functionInvoker, listTasks, ref, updateTask, type Tool } from '../src/index.js';

const USER = '6f1d2c3b-4a5e-4f60-8a7b-1c2d3e4f5a6b';
const TASKS = ['Buy groceries', 'Buy milk', 'Call mom', 'Dentist appointment', 'Read a book'].map((title, i) => ({
  task_id: `0000000${i}-1b2d-4c6e-9f7a-8b9c0d1e2f3a`, user_id: USER, title, completed: i === 2, priority: 'medium' as const, created_at: '2026-01-01T00:00:00Z',
}));
const unlimited = (t: Tool) => defineTool({ ...t, rateLimit: undefined });
const list = unlimited(listTasks);
const update = unlimited(updateTask);
const chain = defineChain({
  name: 'find_and_update', input: findAndUpdate.input, context: findAndUpdate.context!,
  steps: [
    { id: 'find', tool: list, input: { user_id: ref('context', 'userId'), status: 'all' } },
    { id: 'target', select: { from: ref('find', 'tasks'), where: { title: { contains: ref('input', 'match') } }, expect: 'one' } },
    { id: 'update', tool: update, input: { user_id: ref('context', 'userId'), task_id: ref('target', 'task_id'), title: ref('input', 'title') } },
  ],
  output: (s) => s.results.update.task,
  timeoutMs: 7000,
});
const impl = {
  list_tasks: async () => { await sleep(5); return { tasks: TASKS }; },
  update_task: async (i: { title?: string }) => { await sleep(5); return { task: { ...TASKS[3]!, title: i.title ?? '' } }; },
};
const runner = createRunner({ invoker: functionInvoker(impl), tools: [list, update] });
runner.events.on('step:end', () => {});
runner.events.on('chain:end', () => {});
const one = () => runner.run(chain, { match: 'dentist', title: 'x' }, { context: { userId: USER } });
const mb = (b: number): string => (b / 1048576).toFixed(1);
await Promise.all(Array.from({ length: 1000 }, one));
if (process.env.PEAK_ALLOC) {
  // Every allocation sampled, collected or not (PEAK_ALLOC=file.heapprofile): where a chain's garbage comes from.
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true } as never);
  await Promise.all(Array.from({ length: 10_000 }, one));
  const { profile } = await session.post('HeapProfiler.stopSampling');
  (await import('node:fs')).writeFileSync(process.env.PEAK_ALLOC, JSON.stringify(profile));
  process.exit(0);
}
for (let round = 0; round < 3; round++) {
  globalThis.gc!();
  globalThis.gc!();
  const heap0 = process.memoryUsage().heapUsed;
  let top = heap0;
  const sampler = setInterval(() => { top = Math.max(top, process.memoryUsage().heapUsed); }, 1);
  (globalThis as { held?: unknown }).held = await Promise.all(Array.from({ length: 10_000 }, one));
  clearInterval(sampler);
  if (round === 0) console.log(JSON.stringify((globalThis as { held?: unknown[] }).held![0]).length, (globalThis as { held?: unknown[] }).held!.length);
  globalThis.gc!();
  const held = process.memoryUsage().heapUsed;
  (globalThis as { held?: unknown }).held = undefined;
  globalThis.gc!();
  const after = process.memoryUsage().heapUsed;
  if (process.env.PEAK_SNAPSHOT && round === 0) console.log('snapshot', (await import('node:v8')).writeHeapSnapshot('/tmp/perf/peak.heapsnapshot'));
  console.log(`held +${mb(held - heap0)} MB, peak +${mb(top - heap0)} MB; results hold ${((held - after) / 10_000).toFixed(0)} B each; runner keeps +${mb(after - heap0)} MB`);
}
await runner.close();
