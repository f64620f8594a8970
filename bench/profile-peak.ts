// The 10,000-chain load of run.ts in one process, to see where its peak heap goes (not part of `npm run bench`):
//   npx tsup bench/profile-peak.ts --no-config --format esm --target node20 --out-dir .bench --silent && node --expose-gc .bench/profile-peak.js
// Prints the peak above the start, what the results hold once all resolved (after a GC), and the heap without them.
import { createRunner, functionInvoker } from '../src/index.js';
import { chain, list, slow, update, USER } from './fixture.js';

const runner = createRunner({ invoker: functionInvoker(slow), tools: [list, update] });
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
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 1024,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  } as never);
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
  const sampler = setInterval(() => {
    top = Math.max(top, process.memoryUsage().heapUsed);
  }, 1);
  (globalThis as { held?: unknown }).held = await Promise.all(Array.from({ length: 10_000 }, one));
  clearInterval(sampler);
  if (round === 0)
    console.log(
      JSON.stringify((globalThis as { held?: unknown[] }).held![0]).length,
      (globalThis as { held?: unknown[] }).held!.length,
    );
  globalThis.gc!();
  const held = process.memoryUsage().heapUsed;
  (globalThis as { held?: unknown }).held = undefined;
  globalThis.gc!();
  const after = process.memoryUsage().heapUsed;
  if (process.env.PEAK_SNAPSHOT && round === 0)
    console.log('snapshot', (await import('node:v8')).writeHeapSnapshot('/tmp/perf/peak.heapsnapshot'));
  console.log(
    `held +${mb(held - heap0)} MB, peak +${mb(top - heap0)} MB; results hold ${((held - after) / 10_000).toFixed(0)} B each; runner keeps +${mb(after - heap0)} MB`,
  );
}
await runner.close();
