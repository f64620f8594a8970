// `npm run inspector`: the demo's task chains run on a durable (memory) runner, and the inspector
// serves them on 127.0.0.1: the approvals inbox, a failed run to re-run, a long export to cancel.
// Options: PORT=4777 (default; 0 picks a free port). Stop with Ctrl-C. `--check` (CI): serve, read the
// page and the runs once, and exit.
import { createServer } from 'node:http';
import { z } from 'zod';
import {
  createRunner,
  defineChain,
  defineTool,
  findAndComplete,
  findAndDelete,
  findAndUpdate,
  functionInvoker,
  memoryIdempotencyStore,
  memoryRunStore,
  ref,
  taskChains,
  taskSummary,
  taskTools,
  type ToolInvoker,
} from 'chainkit';
import { inspector, toNodeHandler } from 'chainkit/inspector';
import { createTaskStore, fixtures } from 'chainkit/testing';

// A long export, to watch live and cancel from the page: progress every 300 ms until cancelled (or 2 minutes).
const exportTasks = defineTool({
  name: 'export_tasks',
  description: 'Exports every task to the archive.',
  effect: 'read',
  timeoutMs: 150_000,
  input: z.object({ format: z.enum(['csv', 'json']) }),
  output: z.object({ rows: z.number() }),
});
const nightlyExport = defineChain({
  name: 'nightly_export',
  input: z.object({ format: z.enum(['csv', 'json']) }),
  timeoutMs: 150_000,
  steps: [{ id: 'export', tool: exportTasks, input: { format: ref('input', 'format') } }],
});
const exporter = functionInvoker([exportTasks], {
  export_tasks: async (_input, call) => {
    for (let rows = 0; rows < 400; rows += 1) {
      await new Promise((r) => setTimeout(r, 300));
      if (call.signal.aborted) throw call.signal.reason;
      call.progress({ rows });
    }
    return { rows: 400 };
  },
});

const tasks = createTaskStore({ users: fixtures.users });
const invoker: ToolInvoker = (call) => (call.tool === 'export_tasks' ? exporter(call) : tasks.invoker(call));
const idempotency = memoryIdempotencyStore();
const runner = createRunner({
  invoker,
  tools: [...taskTools, exportTasks],
  chains: [...taskChains, nightlyExport],
  secret: 'example-secret-change-me-please!',
  traceDetail: 'full',
  stores: { idempotency, runs: memoryRunStore({ idempotency }) },
});
const alice = { context: { userId: fixtures.alice }, sessionId: 'demo-session' };

// Runs to look at: completed ones, one with a retry, one failed (re-run it once "fixed"), two parked at the delete gate.
await runner.run(taskSummary, {}, alice);
tasks.failNext('update_task', { status: 'error', error: 'database_error', message: 'deadlock detected' });
await runner.run(findAndUpdate, { match: 'dentist', title: 'Dentist at 3pm' }, alice);
await runner.run(findAndComplete, { match: 'buy' }, alice); // ambiguous: fails, asks which
// Refused once (not retried): re-run it from the page, it goes on from the failed step. The token in the message is redacted.
tasks.failNext('update_task', {
  throw: Object.assign(new Error('Forbidden: token=tk_live_51Hx9 expired'), { status: 403 }),
});
await runner.run(findAndUpdate, { match: 'task 3', priority: 'high' }, alice);
tasks.failNext('list_tasks', { throw: Object.assign(new Error('Service Unavailable'), { status: 503 }) });
await runner.run(findAndComplete, { match: 'buy milk' }, alice);
for (let i = 0; i < 6; i++) await runner.run(taskSummary, {}, alice); // enough to learn which tool follows which
await runner.run(findAndDelete, { match: 'groceries' }, alice);
await runner.run(findAndDelete, { match: 'dentist' }, alice);
void runner.run(nightlyExport, { format: 'csv' }, { runId: `export-${Date.now()}` }); // runs until cancelled

const handle = inspector(runner, {
  basePath: '/inspector',
  // Served on 127.0.0.1 only, for this demo. In an app: check the session, e.g. `(req) => isAdmin(req)`.
  authorize: () => true,
  actor: () => 'demo-operator',
});
const server = createServer(toNodeHandler(handle));
const check = process.argv.includes('--check');
server.listen(check ? 0 : Number(process.env.PORT ?? 4777), '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const url = `http://127.0.0.1:${port}/inspector/`;
  console.log(`chainkit inspector: ${url}   (Ctrl-C to stop)`);
  if (check)
    void selfCheck(url).then(stop, (error: unknown) => {
      console.error(error);
      process.exit(1);
    });
});
async function selfCheck(url: string): Promise<void> {
  const page = await fetch(url);
  const Overview = z.object({ inbox: z.array(z.unknown()), runs: z.array(z.unknown()) });
  const overview = Overview.parse(await (await fetch(`${url}api/overview`)).json());
  if (page.status !== 200 || overview.inbox.length !== 2)
    throw new Error(`unexpected: page ${page.status}, inbox ${overview.inbox.length}`);
  console.log(`page ${page.status}, ${overview.runs.length} runs, ${overview.inbox.length} in the inbox`);
}
function stop(): void {
  server.close();
  server.closeAllConnections();
  void runner.close().then(() => process.exit(0));
}
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
