// Durable runs: an instance stops mid-chain (here: closed while its second step hangs, as a deploy
// would stop it) and another instance finishes the run from its journal — the first step is not
// called again, the second runs again under the same idempotency key.
// Needs Redis on 127.0.0.1:6379. Run: npx tsx examples/durable-runs.ts
import { Redis } from 'ioredis';
import { z } from 'zod';
import { chain, createRunner, defineTool, functionInvoker } from 'chainkit';
import { redisStores } from 'chainkit/redis';

const fetchOrder = defineTool({
  name: 'fetch_order',
  description: 'Read an order',
  effect: 'read',
  input: z.object({ orderId: z.string() }),
  output: z.object({ orderId: z.string(), amount: z.number() }),
});
const refund = defineTool({
  name: 'refund',
  description: 'Refund an order',
  effect: 'write',
  // The payment API dedupes by the idempotency key it is sent: calling it again after a crash is safe.
  // A plain write (not idempotent) would instead park the recovered run in_doubt for someone to decide.
  idempotent: true,
  input: z.object({ orderId: z.string(), amount: z.number() }),
  output: z.object({ refundId: z.string() }),
});
const refundOrder = chain('refund_order', { input: z.object({ orderId: z.string() }) })
  .tool('order', fetchOrder, (ref) => ({ orderId: ref('input', 'orderId') }))
  .tool('refund', refund, (ref) => ({ orderId: ref('order', 'orderId'), amount: ref('order', 'amount') }))
  .build();

const redis = new Redis({ host: '127.0.0.1', port: 6379 });
const prefix = `example-durable-${Date.now()}`;
const calls: string[] = [];

/** One "instance": its own runner on the shared Redis; `stuck` makes its refund hang. */
function instance(name: string, stuck: boolean) {
  const invoker = functionInvoker([fetchOrder, refund], {
    fetch_order: async ({ orderId }) => (calls.push(`${name}: fetch_order`), { orderId, amount: 42 }),
    refund: async (_input, call) => {
      calls.push(`${name}: refund (key ${call.idempotencyKey})`);
      if (stuck) await new Promise(() => {}); // hangs until the instance stops
      return { refundId: `rf-${call.idempotencyKey}` };
    },
  });
  return createRunner({
    invoker,
    tools: [fetchOrder, refund],
    chains: [refundOrder],
    stores: redisStores(redis, { prefix }),
    leaseMs: 500,
  });
}

const a = instance('A', true);
const pending = a.run(refundOrder, { orderId: 'o-17' }, { runId: 'request-17' });
await new Promise((r) => setTimeout(r, 100));
console.log('A stops mid-run:', (await a.getRun('request-17'))?.steps, 'journaled');
await a.close();
console.log('A answered its caller:', (await pending).status, '(the run stays recorded as in flight)');

await new Promise((r) => setTimeout(r, 600)); // A's lease expires
const b = instance('B', false);
const [recovered] = await b.recover();
console.log('B recovered it:', recovered?.status, recovered?.status === 'completed' ? recovered.output : '');
console.log('calls:', calls);
console.log(
  'the same run id again:',
  (await b.run(refundOrder, { orderId: 'o-17' }, { runId: 'request-17' })).status,
  '(recorded result, no call)',
);
await b.close();
const keys = await redis.keys(`${prefix}*`);
if (keys.length > 0) await redis.del(...keys);
redis.disconnect();
