// chainkit/sse over a real HTTP server on 127.0.0.1, read with fetch: ids are seqs, Last-Event-ID
// resumes with no gap and no duplicate, a failed watch sends an error event, a client that leaves ends the watch.
import { createServer, type Server } from 'node:http';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, functionInvoker, memoryRunStore, ref, type RunEvent } from 'chainkit';
import { formatSSE, lastEventId, SSE_HEADERS, toSSE } from 'chainkit/sse';

const count = defineTool({
  name: 'count',
  description: 'c',
  input: z.object({ n: z.number() }),
  output: z.object({ n: z.number() }),
  effect: 'read',
});
const chain = defineChain({
  name: 'sse_chain',
  input: z.object({ n: z.number() }),
  steps: [{ id: 'count', tool: count, input: { n: ref('input', 'n') } }],
});
const runner = createRunner({
  invoker: functionInvoker([count], {
    count: async ({ n }, call) => {
      for (let i = 1; i <= n; i++) call.progress({ done: i, of: n, big: 2n ** 64n });
      return { n };
    },
  }),
  chains: [chain],
  stores: { runs: memoryRunStore() },
});

let server: Server;
let base = '';
beforeAll(async () => {
  server = createServer((req, res) => {
    const runId = decodeURIComponent(new URL(req.url!, 'http://x').pathname.split('/')[2]!);
    const stop = new AbortController();
    res.on('close', () => stop.abort());
    res.writeHead(200, SSE_HEADERS);
    Readable.fromWeb(
      toSSE(runner.watch(runId, { after: lastEventId(req.headers) ?? 0, signal: stop.signal }), {
        heartbeatMs: 0,
      }) as never,
    ).pipe(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});
afterAll(async () => {
  await runner.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

interface Frame {
  id?: string;
  event?: string;
  data?: string;
}
async function read(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ frames: Frame[]; type: string | null }> {
  const res = await fetch(url, { headers });
  const text = await res.text();
  const frames = text
    .split('\n\n')
    .filter((b) => b.trim() !== '')
    .map((block) => {
      const frame: Frame = {};
      for (const line of block.split('\n')) {
        const at = line.indexOf(': ');
        if (at > 0) frame[line.slice(0, at) as keyof Frame] = line.slice(at + 2);
      }
      return frame;
    });
  return { frames, type: res.headers.get('content-type') };
}

describe('chainkit/sse', () => {
  it('streams a run as text/event-stream: id is the seq, event the type, data the event; ends after run:end', async () => {
    const r = await runner.run(chain, { n: 3 }, { runId: 'sse-1' });
    expect(r.status).toBe('completed');
    const { frames, type } = await read(`${base}/runs/sse-1`);
    expect(type).toBe('text/event-stream; charset=utf-8');
    expect(frames.map((f) => f.event)).toEqual([
      'run:start',
      'step:start',
      'step:progress',
      'step:progress',
      'step:progress',
      'step:end',
      'run:end',
    ]);
    expect(frames.map((f) => f.id)).toEqual(['1', '2', '3', '4', '5', '6', '7']);
    const progress = JSON.parse(frames[2]!.data!) as RunEvent;
    expect(progress).toMatchObject({
      seq: 3,
      runId: 'sse-1',
      type: 'step:progress',
      step: 'count',
      data: { done: 1, of: 3, big: '18446744073709551616' },
    });
  });

  it('a reconnect with Last-Event-ID gets every later event once', async () => {
    await runner.run(chain, { n: 4 }, { runId: 'sse-2' });
    const all = (await read(`${base}/runs/sse-2`)).frames;
    const rest = (await read(`${base}/runs/sse-2`, { 'last-event-id': '3' })).frames;
    expect(rest.map((f) => f.id)).toEqual(all.slice(3).map((f) => f.id));
    expect(rest).toEqual(all.slice(3));
  });

  it('a watch that fails sends an error event with its code and ends', async () => {
    const { frames } = await read(`${base}/runs/unknown-run`);
    expect(frames).toHaveLength(1);
    expect(frames[0]!.event).toBe('error');
    expect(JSON.parse(frames[0]!.data!)).toMatchObject({ code: 'not_found', lastSeq: 0 });
  });

  it("cancelling runner.stream's SSE body ends the watch waiting for the next event at once (stream takes no signal)", async () => {
    const store = memoryRunStore();
    let reads = 0;
    const read = store.events!.read.bind(store.events);
    store.events!.read = (...a) => (reads++, read(...a));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const slowTool = defineTool({
      name: 'slow',
      description: 's',
      input: z.object({}),
      output: z.object({}),
      effect: 'read',
    });
    const slowChain = defineChain({
      name: 'slow_chain',
      input: z.object({}),
      steps: [{ id: 's', tool: slowTool, input: {} }],
    });
    const own = createRunner({
      invoker: functionInvoker([slowTool], {
        slow: async (_i, call) => {
          call.progress({ started: true });
          await released; // a long call: no event for a while
          return {};
        },
      }),
      stores: { runs: store },
    });
    try {
      const { events, result } = own.stream(slowChain, {});
      const reader = toSSE(events, { heartbeatMs: 0 }).getReader();
      for (;;) if (new TextDecoder().decode((await reader.read()).value).includes('step:progress')) break;
      await new Promise((r) => setTimeout(r, 100)); // the watch now waits for the next event
      let cancelled = false;
      void reader.cancel().then(() => (cancelled = true)); // the browser left: this resolved only at the next event
      await new Promise((r) => setTimeout(r, 50));
      const before = reads;
      await new Promise((r) => setTimeout(r, 2_500)); // past two wait rounds (1 s each)
      expect({ cancelled, reads: reads - before }).toEqual({ cancelled: true, reads: 0 });
      release();
      await result;
    } finally {
      release();
      await own.close();
    }
  });

  it('a run id that is no run id is an error event too (invalid_run_id), not a throw in the handler', async () => {
    const { frames } = await read(`${base}/runs/%01`);
    expect(frames.map((f) => f.event)).toEqual(['error']);
    expect(JSON.parse(frames[0]!.data!)).toMatchObject({ code: 'invalid_run_id' });
  });

  it("keeps a failure's own text on the server unless it is a RunWatchError: the browser gets its code and a sentence", async () => {
    // eslint-disable-next-line require-yield -- fails before its first event, as a store that is down does
    async function* down(): AsyncGenerator<RunEvent> {
      throw Object.assign(new Error('run (events): connect ECONNREFUSED 10.0.0.5:6379'), {
        info: { code: 'store_unavailable' },
      });
    }
    const text = await new Response(toSSE(down(), { heartbeatMs: 0 })).text();
    expect(text).not.toContain('10.0.0.5');
    expect(JSON.parse(/^data: (.*)$/m.exec(text)![1]!)).toEqual({
      code: 'store_unavailable',
      message: 'The run could not be watched.',
    });
  });

  it('cancelling the stream ends the watch; lastEventId reads Fetch and Node headers', async () => {
    let returned = false;
    async function* endless(): AsyncGenerator<RunEvent> {
      try {
        for (let seq = 1; ; seq++) {
          yield { seq, runId: 'r', at: 0, type: 'step:progress', step: 's', data: seq };
          await new Promise((r) => setTimeout(r, 1));
        }
      } finally {
        returned = true;
      }
    }
    const reader = toSSE(endless(), { heartbeatMs: 0 }).getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toBe(formatSSE({ seq: 1, runId: 'r', at: 0, type: 'step:progress', step: 's', data: 1 }));
    await reader.cancel();
    expect(returned).toBe(true);
    expect(lastEventId(new Headers({ 'Last-Event-ID': '42' }))).toBe(42);
    expect(lastEventId({ 'last-event-id': ' 7 ' })).toBe(7);
    expect(lastEventId({ 'last-event-id': 'abc' })).toBeUndefined();
    expect(lastEventId({})).toBeUndefined();
  });
});
