// Kill and recover, on PostgreSQL: a worker process starts a refund and is killed (SIGKILL) while the
// refund is in flight; this process then recovers the run from its journal — the order is not read
// again, the refund runs again under the same idempotency key — and the same run id returns the result.
// Needs PostgreSQL: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test); the tables go in
// a schema of their own, dropped at the end. Run: npx tsx examples/durable-kill-recover.ts
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { z } from 'zod';
import { chain, createRunner, defineTool, functionInvoker } from 'chainkit';
import { postgresStores } from 'chainkit/postgres';

const fetchOrder = defineTool({
  name: 'fetch_order',
  description: 'Read an order',
  effect: 'read',
  input: z.object({ orderId: z.string() }),
  output: z.object({ orderId: z.string(), amount: z.number() }),
});
// The payment API honours an Idempotency-Key, so a refund in flight at a crash may be sent again.
const refund = defineTool({
  name: 'refund',
  description: 'Refund an order',
  effect: 'write',
  idempotent: true,
  input: z.object({ orderId: z.string(), amount: z.number() }),
  output: z.object({ refundId: z.string() }),
});
const refundOrder = chain('refund_order', { input: z.object({ orderId: z.string() }) })
  .tool('order', fetchOrder, (ref) => ({ orderId: ref('input', 'orderId') }))
  .tool('refund', refund, (ref) => ({ orderId: ref('order', 'orderId'), amount: ref('order', 'amount') }))
  .build();

const role = process.argv[2] === 'worker' ? 'worker' : 'recoverer';
const schema = process.argv[3] ?? `example_kill_${process.pid}`;
const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  max: 2,
});
const stores = postgresStores(pool, { schema });

/** A runner as every instance makes it: the same chains, the same `secret`, the same stores. */
function instance(refundHangs: boolean) {
  const invoker = functionInvoker([fetchOrder, refund], {
    fetch_order: async ({ orderId }) => {
      console.log(`${role}: fetch_order`);
      return { orderId, amount: 42 };
    },
    refund: async (_input, call) => {
      console.log(`${role}: refund (key ${call.idempotencyKey})`);
      if (refundHangs) {
        process.send?.('refund-started'); // the parent kills this process now
        await new Promise(() => {});
      }
      return { refundId: `rf-${call.idempotencyKey}` };
    },
  });
  return createRunner({
    invoker,
    tools: [fetchOrder, refund],
    chains: [refundOrder],
    stores,
    // One secret for every instance: a confirmation token issued by one resumes on any other.
    secret: process.env.CHAINKIT_SECRET ?? 'example-secret-shared-by-every-instance',
    // How long an owner's silence counts as its death (default 30 s): short here, to recover at once.
    leaseMs: 1_000,
  });
}

if (role === 'worker') {
  await instance(true).run(refundOrder, { orderId: 'o-17' }, { runId: 'request-17' }); // never returns: killed mid-refund
} else {
  await stores.migrate();
  const worker = fork(fileURLToPath(import.meta.url), ['worker', schema], { stdio: 'inherit' });
  const exited = new Promise((resolve) => worker.once('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    void exited.then(() => reject(new Error('the worker exited before its refund started')));
  });
  worker.kill('SIGKILL');
  await exited;
  console.log('worker killed (SIGKILL) while its refund was in flight');

  const runner = instance(false);
  const stored = await runner.getRun('request-17');
  console.log('the run store says:', stored?.status, 'journaled', stored?.steps);
  // Its lease runs out within a second; until then the run is not claimed.
  let recovered = await runner.recover();
  for (let i = 0; recovered.length === 0 && i < 50; i++) {
    await new Promise((r) => setTimeout(r, 100));
    recovered = await runner.recover();
  }
  const [result] = recovered;
  console.log('recovered:', result?.status, result?.status === 'completed' ? result.output : result);
  const again = await runner.run(refundOrder, { orderId: 'o-17' }, { runId: 'request-17' });
  console.log('the same run id again:', again.status, '(the recorded result; no tool called)');
  await runner.close();
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
  if (result?.status !== 'completed' || again.status !== 'completed') process.exitCode = 1;
}
