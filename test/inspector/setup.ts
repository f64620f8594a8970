// Shared by the inspector's tests: a durable runner with chains that park at a gate, fail with
// secrets in their messages, or run until cancelled; and a node:http server mounting a handler.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import {
  createRunner,
  defineChain,
  defineTool,
  functionInvoker,
  memoryIdempotencyStore,
  ref,
  type Runner,
} from '../../src/index.js';
import { toNodeHandler, type InspectorHandler } from '../../src/inspector/index.js';
import { memoryRunStore } from '../../src/testing/index.js';

/** Secrets the runs carry in their input, context and tool errors: no response may hold any of them. */
export const SECRETS = [
  'sk-live-INPUT-7f3a9c',
  'ctx-SESSION-TOKEN-91b2',
  'hunter2-TOOL-ERR',
  'Bearer-abcdefgh12345678-XYZ',
];

const lookup = defineTool({
  name: 'lookup',
  description: 'l',
  effect: 'read',
  input: z.object({ account: z.string(), apiKey: z.string() }),
  output: z.object({ id: z.string() }),
});
const pay = defineTool({
  name: 'pay',
  description: 'p',
  effect: 'write',
  input: z.object({ id: z.string() }),
  output: z.object({ paid: z.boolean() }),
});
const explode = defineTool({
  name: 'explode',
  description: 'e',
  effect: 'read',
  input: z.object({ id: z.string() }),
  output: z.object({ ok: z.boolean() }),
});
const slow = defineTool({
  name: 'slow',
  description: 's',
  effect: 'read',
  timeoutMs: 60_000,
  input: z.object({ n: z.number() }),
  output: z.object({ n: z.number() }),
});

export const gated = defineChain({
  name: 'pay_gated',
  input: z.object({ account: z.string(), apiKey: z.string() }),
  context: z.object({ sessionToken: z.string() }),
  steps: [
    { id: 'find', tool: lookup, input: { account: ref('input', 'account'), apiKey: ref('input', 'apiKey') } },
    {
      id: 'pay',
      tool: pay,
      input: { id: ref('find', 'id') },
      confirm: { prompt: 'Pay the account? (apiKey=sk-live-INPUT-7f3a9c)' },
    },
  ],
});
export const failing = defineChain({
  name: 'fails_with_secret',
  input: z.object({ account: z.string(), apiKey: z.string() }),
  context: z.object({ sessionToken: z.string() }),
  steps: [
    { id: 'find', tool: lookup, input: { account: ref('input', 'account'), apiKey: ref('input', 'apiKey') } },
    { id: 'boom', tool: explode, input: { id: ref('find', 'id') } },
  ],
});
export const long = defineChain({
  name: 'long_run',
  input: z.object({ n: z.number() }),
  timeoutMs: 60_000,
  steps: [{ id: 'wait', tool: slow, input: { n: ref('input', 'n') } }],
});

export const INPUT = { account: 'acc-1', apiKey: SECRETS[0]! };
export const CONTEXT = { sessionToken: SECRETS[1]! };

export interface Harness {
  runner: Runner;
  calls: { pay: number; slowAborted: number; slowStarted: number; explodeFails: boolean };
}

/** A durable runner (memory run store) with the test chains; `explode` fails with secrets in its message until healed. */
export function makeRunner(): Harness {
  const calls = { pay: 0, slowAborted: 0, slowStarted: 0, explodeFails: true };
  const idempotency = memoryIdempotencyStore();
  const invoker = functionInvoker([lookup, pay, explode, slow], {
    lookup: async ({ account }) => ({ id: `id-${account}` }),
    pay: async () => {
      calls.pay++;
      await new Promise((r) => setTimeout(r, 20));
      return { paid: true };
    },
    explode: async () => {
      if (calls.explodeFails)
        throw Object.assign(
          new Error(
            `upstream refused: password=${SECRETS[2]} with Authorization: Bearer ${SECRETS[3]} and key ${SECRETS[0]}`,
          ),
          { status: 400 },
        );
      return { ok: true };
    },
    slow: async ({ n }, call) => {
      calls.slowStarted++;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 55_000);
        call.signal.addEventListener(
          'abort',
          () => {
            calls.slowAborted++;
            clearTimeout(t);
            resolve();
          },
          { once: true },
        );
      });
      return { n };
    },
  });
  const runner = createRunner({
    invoker,
    tools: [lookup, pay, explode, slow],
    chains: [gated, failing, long],
    secret: 'test-secret-0123456789-abcdefghij',
    traceDetail: 'full',
    stores: { idempotency, runs: memoryRunStore({ idempotency }) },
  });
  return { runner, calls };
}

/** Serves `handle` with node:http on 127.0.0.1; resolves with its origin and a closer. */
export async function serve(
  handle: InspectorHandler,
): Promise<{ origin: string; server: Server; close: () => Promise<void> }> {
  const server = createServer(toNodeHandler(handle));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    server,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Opens the page like a browser: the cookie it sets and the token it embeds. */
export async function session(
  origin: string,
  base: string,
  headers: Record<string, string> = {},
): Promise<{ cookie: string; token: string; html: string }> {
  const res = await fetch(`${origin}${base}/`, { headers });
  const html = await res.text();
  const cookie = (res.headers.getSetCookie()[0] ?? '').split(';')[0]!;
  const token = /name="chainkit-csrf" content="([^"]+)"/.exec(html)?.[1] ?? '';
  return { cookie, token, html };
}

/** Waits until `check` holds (polling every 10 ms), up to `ms`. */
export async function until(check: () => boolean | Promise<boolean>, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}
