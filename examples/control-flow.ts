// Control flow (§12, docs/guides/control-flow.md): one runnable example per construct — a sub-chain
// as a step, a forEach over a list (4 at once, failures collected), a branch, a bounded loop, the
// built-in completeAll, and a run that sleeps then waits for a signal. Everything runs in memory.
// Run: npx tsx examples/control-flow.ts
import { z } from 'zod';
import {
  chain,
  completeAll,
  createRunner,
  defineTool,
  formatTrace,
  functionInvoker,
  memoryRunStore,
  taskTools,
} from 'chainkit';
import { createTaskStore, fixtures } from 'chainkit/testing';

// Three small tools over an in-memory "shop".
const Order = z.object({ id: z.string(), email: z.string(), phone: z.string().optional(), total: z.number() });
const listOrders = defineTool({
  name: 'list_orders',
  description: 'List open orders',
  effect: 'read',
  input: z.object({ status: z.enum(['open', 'all']) }),
  output: z.object({ orders: z.array(Order) }),
});
const notify = defineTool({
  name: 'notify',
  description: 'Send a message',
  input: z.object({ to: z.string(), text: z.string() }),
  output: z.object({ sent: z.boolean(), via: z.string() }),
});
const exportStatus = defineTool({
  name: 'export_status',
  description: 'Is the export ready?',
  effect: 'read',
  input: z.object({ id: z.string() }),
  output: z.object({ ready: z.boolean(), url: z.string().optional() }),
});

let polls = 0;
const invoker = functionInvoker([listOrders, notify, exportStatus], {
  list_orders: () => ({
    orders: [
      { id: 'o1', email: 'ada@example.com', total: 30 },
      { id: 'o2', email: 'bob@example.com', phone: '+44 7700 900001', total: 12 },
      { id: 'o3', email: 'not-an-email', total: 99 },
    ],
  }),
  notify: ({ to, text }) => {
    if (!to.includes('@') && !to.startsWith('+'))
      return { status: 'error', error: 'invalid_recipient', message: `Cannot reach ${to}` };
    return { sent: text.length > 0, via: to.startsWith('+') ? 'sms' : 'email' };
  },
  export_status: ({ id }) =>
    ++polls < 3 ? { ready: false } : { ready: true, url: `https://example.com/exports/${id}.csv` },
});
const runner = createRunner({ invoker, tools: [listOrders, notify, exportStatus] });

// 1. A sub-chain: a chain run as one step, its input mapped and checked like a tool's.
const thank = chain('thank', { input: z.object({ to: z.string(), total: z.number() }) })
  .tool('send', notify, (ref) => ({ to: ref('input', 'to'), text: 'Thank you for your order!' }))
  .output((s) => ({ to: s.results.send.via }));

// 2. forEach: `thank` per open order, 4 at once; one bad address does not stop the others.
const thankAll = chain('thank_all', { input: z.object({}) })
  .tool('orders', listOrders, () => ({ status: 'open' }))
  .forEach('thanked', (ref) => ({
    over: ref('orders', 'orders'),
    chain: thank,
    input: (item) => ({ to: item('email'), total: item('total') }),
    concurrency: 4,
    onItemError: 'collect',
  }))
  .chain('summary', thank, () => ({ to: 'owner@example.com', total: 0 }))
  .output((s) => ({
    ok: s.results.thanked.filter((r) => r.ok).length,
    failed: s.results.thanked.flatMap((r) => (r.ok ? [] : [r.error.code])),
  }));

// 3. branch: email or SMS, picked by the input; the result is either case's output.
const byEmail = chain('by_email', { input: z.object({ to: z.string() }) })
  .tool('send', notify, (ref) => ({ to: ref('input', 'to'), text: 'Your order shipped' }))
  .build();
const bySms = chain('by_sms', { input: z.object({ to: z.string() }) })
  .tool('send', notify, (ref) => ({ to: ref('input', 'to'), text: 'Shipped!' }))
  .build();
const shipped = chain('shipped', {
  input: z.object({ channel: z.enum(['email', 'sms']), email: z.string(), phone: z.string() }),
})
  .branch('notify', (ref) => ({
    on: ref('input', 'channel'),
    cases: {
      email: { chain: byEmail, input: { to: ref('input', 'email') } },
      sms: { chain: bySms, input: { to: ref('input', 'phone') } },
    },
  }))
  .output((s) => s.results.notify.via);

// 4. loop: poll until the export is ready, at most 10 times, 50 ms apart.
const check = chain('check_export', { input: z.object({ id: z.string() }) })
  .tool('status', exportStatus, (ref) => ({ id: ref('input', 'id') }))
  .build();
const waitForExport = chain('wait_for_export', { input: z.object({ exportId: z.string() }) })
  .loop('poll', {
    chain: check,
    input: (ref) => ({ id: ref('input', 'exportId') }),
    until: (out) => out.ready,
    max: 10,
    delayMs: 50,
  })
  .output((s) => s.results.poll.url);

const a = await runner.run(thankAll, {});
console.log('forEach + sub-chain:', a.status === 'completed' ? a.output : a.status);
console.log(formatTrace(a.trace, { maxChildren: 3 }));
const b = await runner.run(shipped, { channel: 'sms', email: 'ada@example.com', phone: '+44 7700 900001' });
console.log('branch:', b.status === 'completed' ? b.output : b.status);
const c = await runner.run(waitForExport, { exportId: 'e42' });
console.log('loop:', c.status === 'completed' ? c.output : c.status, `after ${polls} polls`);
await runner.close();

// 5. completeAll: every pending task that matches, 4 at once; more than 10 would ask first.
const tasks = createTaskStore({ users: fixtures.users });
const taskRunner = createRunner({ invoker: tasks.invoker, tools: [...taskTools], chains: [completeAll] });
const d = await taskRunner.run(completeAll, { match: 'buy' }, { context: { userId: fixtures.alice } });
console.log('completeAll:', d.status === 'completed' ? d.output.completed.map((t) => t.title) : d.status);
await taskRunner.close();

// 6. sleep and waitFor: with a run store, a run that sleeps a second or more, or waits for a signal,
// is parked `waiting` (no process holds it) and run() resolves at once. The recovery poller (or
// recover()) wakes a sleeper on any instance; runner.signal() continues a waiting run, exactly once.
let clock = Date.now(); // a clock this example moves, so it does not really wait a minute
const durableRunner = createRunner({
  invoker,
  tools: [listOrders, notify, exportStatus],
  stores: { runs: memoryRunStore({ now: () => clock }) },
  now: () => clock,
});
const Approval = z.object({ approved: z.boolean(), by: z.string() });
const refundFlow = chain('refund_flow', { input: z.object({ to: z.string() }) })
  .sleep('cool_off', 60_000)
  .waitFor('approval', { signal: 'approval', schema: Approval, timeoutMs: 86_400_000 })
  .tool('tell', notify, (ref) => ({ to: ref('input', 'to'), text: 'Your refund was reviewed' }))
  .output((s) => ({ approved: s.results.approval.approved, by: s.results.approval.by, sent: s.results.tell.sent }));
const e1 = await durableRunner.run(refundFlow, { to: 'ada@example.com' }, { runId: 'refund-1' });
console.log('sleep:', e1.status, e1.status === 'waiting' ? e1.waiting : '');
clock += 60_001;
const [e2] = await durableRunner.recover(); // the minute is up: woken, then parked again at waitFor
console.log('waitFor:', e2?.status, e2?.status === 'waiting' ? e2.waiting.signal : '');
const e3 = await durableRunner.signal('refund-1', 'approval', { approved: true, by: 'ops:alice' });
console.log('signal:', typeof e3 === 'string' ? e3 : e3.status === 'completed' ? e3.output : e3.status);
console.log('again:', await durableRunner.signal('refund-1', 'approval', { approved: false, by: 'ops:bob' })); // not_waiting
await durableRunner.close();

if (a.status !== 'completed' || b.status !== 'completed' || c.status !== 'completed' || d.status !== 'completed')
  process.exit(1);
if (e1.status !== 'waiting' || e2?.status !== 'waiting' || typeof e3 === 'string' || e3.status !== 'completed')
  process.exit(1);
