// The chainkit side of bench:flow alone, for a CPU profile (not part of `npm run bench`):
//   npx tsup bench/profile-flow.ts --no-config --format esm --target node20 --out-dir .bench --silent && node --cpu-prof .bench/profile-flow.js
import { createRunner, functionInvoker } from '../src/index.js';
import { flowImpl, forEachChain, getItem, listItems, saveItem } from './flow-fixture.js';

const impl = flowImpl(100, () => 0);
const doAll = forEachChain(8);
const runner = createRunner({ invoker: functionInvoker(impl), tools: [listItems, getItem, saveItem] });
if (!process.env.NOEV) runner.events.on('step:end', () => undefined);
if (!process.env.NOEV) runner.events.on('item:end', () => undefined);
const rounds = Number(process.env.FLOW_ROUNDS ?? 3000);
const t = performance.now();
const cpu = process.cpuUsage();
for (let i = 0; i < rounds; i++) {
  const r = await runner.run(doAll, { n: 100 });
  if (r.status !== 'completed') throw new Error(r.status);
}
const used = process.cpuUsage(cpu);
console.log(
  `${((performance.now() - t) / rounds).toFixed(3)} ms a forEach, ${((used.user + used.system) / 1000 / rounds).toFixed(3)} ms CPU`,
);
await runner.close();
