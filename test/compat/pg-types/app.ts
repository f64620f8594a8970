// A strict app on chainkit/postgres with `pg` installed and no `@types/pg`: test/compat/pg-types.test.ts
// copies it beside the PACKED chainkit in a directory of its own (no @types/pg anywhere above it) and
// type-checks it with chainkit's declarations included (`skipLibCheck: false`).
import { createRequire } from 'node:module';
import { z } from 'zod';
import { chain, createRunner, defineTool, functionInvoker } from 'chainkit';
import { postgresStores, type PostgresPool } from 'chainkit/postgres';

// pg without its types: the app states what it uses of it; chainkit/postgres asks no more than `query`.
const pg: {
  Pool: new (config: { connectionString?: string; max?: number }) => PostgresPool & { end(): Promise<void> };
} = createRequire(import.meta.url)('pg');

const fetchOrder = defineTool({
  name: 'fetch_order',
  description: 'Read an order',
  effect: 'read',
  input: z.object({ orderId: z.string() }),
  output: z.object({ orderId: z.string(), amount: z.number() }),
});
const refundOrder = chain('refund_order', { input: z.object({ orderId: z.string() }) })
  .tool('order', fetchOrder, (ref) => ({ orderId: ref('input', 'orderId') }))
  .build();

export async function main(): Promise<void> {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 4 });
  const stores = postgresStores(pool, { schema: 'app_chainkit' });
  await stores.migrate();
  const runner = createRunner({
    invoker: functionInvoker([fetchOrder], { fetch_order: async ({ orderId }) => ({ orderId, amount: 42 }) }),
    tools: [fetchOrder],
    chains: [refundOrder],
    secret: process.env.CHAINKIT_SECRET,
    stores,
    leaseMs: 30_000,
  });
  const result = await runner.run(refundOrder, { orderId: 'o-17' }, { runId: 'request-17' });
  if (result.status === 'completed') console.log(result.output.amount);
  console.log((await runner.getRun('request-17'))?.steps);
  await runner.close();
  await pool.end();
}
