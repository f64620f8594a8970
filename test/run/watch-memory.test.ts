// A watch or stream holds nothing once it ends: combining its signals with the runner's lifelong one
// (AbortSignal.any) kept ~4 KB per stream for the runner's life.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, functionInvoker, memoryRunStore } from '../../src/index.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapMb = (): number => {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 1_048_576;
};

const ping = defineTool({ name: 'ping', description: 'p', effect: 'read', input: z.object({}), output: z.object({}) });
const one = defineChain({ name: 'one', input: z.object({}), steps: [{ id: 'p', tool: ping, input: {} }] });

describe('watches and streams that ended', () => {
  it('leave nothing behind: the heap stays flat over thousands of streams and watches', async () => {
    const runner = createRunner({
      invoker: functionInvoker([ping], { ping: () => ({}) }),
      tools: [ping],
      chains: [one],
      stores: { runs: memoryRunStore({ maxEnded: 50 }) },
    });
    const round = async (): Promise<void> => {
      for (let i = 0; i < 2_000; i++) {
        const s = runner.stream(one, {});
        for await (const e of s.events) void e;
        await s.result;
        const caller = new AbortController();
        for await (const e of runner.watch(s.runId, { signal: caller.signal })) void e;
      }
    };
    await round(); // warm: the store fills to its bound
    const before = heapMb();
    await round();
    await round();
    expect(heapMb() - before).toBeLessThan(4); // it grew ~24 MB over these 4,000 streams and watches
    await runner.close();
  });
});
