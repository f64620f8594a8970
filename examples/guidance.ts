// Guidance for an agent: pick the tools a message needs, read the timing estimate and where it
// came from, explain a failure (its context, alternatives and user message), see a partial run in
// its trace, and hand the agent the learned metrics as a read-only tool. No network.
// Run: npx tsx examples/guidance.ts
import { z } from 'zod';
import {
  classifyComplexity,
  createRunner,
  createToolRegistry,
  defineTool,
  findAndUpdate,
  metricsTool,
  taskSummary,
  taskTools,
} from 'chainkit';
import { createMockInvoker, createTaskStore, fixtures } from 'chainkit/testing';

const store = createTaskStore({ users: fixtures.users });
const registry = createToolRegistry([...taskTools], { tiers: { medium: ['list_tasks', 'add_task', 'complete_task'] } });
const runner = createRunner({ invoker: store.invoker, registry });
const alice = { context: { userId: fixtures.alice }, sessionId: 'chat-1' };

// 1. Intent → tier: only the tools the message needs go into the model's prompt.
for (const message of ['hi there!', 'Add a task to buy stamps', 'Find the milk task, then delete it']) {
  const tier = classifyComplexity(message);
  console.log(
    `${JSON.stringify(message)} → ${tier}: ${
      registry
        .forIntent(message)
        .map((t) => t.name)
        .join(', ') || '(no tools)'
    }`,
  );
}

// 2. A call at a tier: the tier's tool count is in the metadata and the trace; the estimate says its source.
const listed = await runner.invoke('list_tasks', { user_id: fixtures.alice }, { ...alice, tier: 'simple' });
console.log(
  `list_tasks: tier ${listed.metadata.context.tier} (${listed.metadata.context.toolCount} tools, trace says ${listed.trace.toolCount}),` +
    ` estimated ${listed.metadata.timing.estimatedDurationMs} ms from ${listed.metadata.timing.source} data`,
);

// 3. A failure explains itself: a task that does not exist, twice (the second earns fallback advice).
for (const attempt of [1, 2]) {
  const r = await runner.invoke(
    'complete_task',
    { user_id: fixtures.alice, task_id: '00000000-0000-4000-8000-000000000000' },
    alice,
  );
  if (r.status === 'failed') {
    console.log(
      `attempt ${attempt}: ${r.error.category}/${r.error.code} — "${r.error.userMessage}"` +
        ` (timeout ${r.error.context?.timeoutMs} ms, ${r.error.context?.inputSize} characters of input, attempt ${r.error.context?.attempt})`,
    );
    for (const advice of r.metadata.advice) console.log(`  advice: ${advice}`);
  }
}

// 4. A chain that completed its lookup and then found nothing: the trace says 'partial' and lists its errors.
const partial = await runner.run(findAndUpdate, { match: 'walk the llama', title: 'x' }, alice);
console.log(
  `findAndUpdate: result ${partial.status}, trace ${partial.trace.status}, errors: ${partial.trace.errors?.map((e) => e.code).join(', ')}`,
);

// 5. A slow tool: the alternatives keep room for the timeout advice.
const summarise = defineTool({
  name: 'summarise',
  description: 'Summarise a text',
  input: z.object({ text: z.string() }),
  output: z.object({ summary: z.string() }),
  effect: 'read',
  timeoutMs: 50,
  retry: false,
});
const slow = createRunner({ invoker: createMockInvoker({ summarise: { hang: true } }), tools: [summarise] });
const timedOut = await slow.invoke('summarise', { text: 'lorem ipsum '.repeat(1_000) });
if (timedOut.status === 'failed')
  console.log(
    `summarise: ${timedOut.error.code}; alternatives: ${timedOut.error.alternatives.map((a) => a.suggestion).join(', ')}`,
  );
await slow.close();

// 6. The summary's completion rate is a percentage.
const summary = await runner.run(taskSummary, {}, alice);
if (summary.status === 'completed') console.log(`completion rate: ${summary.output.completion_rate} %`);

// 7. The learned metrics as a read-only tool an agent can be given.
const metrics = metricsTool(runner);
console.log(`tool for the model: ${metrics.name} — ${JSON.stringify(Object.keys(metrics.parameters))}`);
const answer = metrics.execute({ view: 'summary', limit: 3 });
if (answer.status === 'ok' && answer.view === 'summary') {
  console.log(
    `entry tools: ${JSON.stringify(answer.entryTools)}; fallback advice given ${answer.fallbackAdvice.total} time(s)`,
  );
}
await runner.close();
