// An agent-style loop: one tool call at a time through runner.invoke, reading the metadata that
// comes back — timing, next-tool suggestions, relevant chains, advice — to decide the next move.
// The "model" here is a scripted policy (no network); a real agent would put the metadata in its prompt.
// Run: npx tsx examples/agent-loop.ts
import { createRunner, createToolRegistry, taskChains, taskTools, type InvokeResult } from 'chainkit';
import { createTaskStore, fixtures } from 'chainkit/testing';

const store = createTaskStore({ users: fixtures.users });
const registry = createToolRegistry([...taskTools], {
  tiers: { simple: ['list_tasks'], medium: ['list_tasks', 'add_task', 'complete_task'], complex: 'all' },
});
const runner = createRunner({
  invoker: store.invoker,
  registry,
  chains: [...taskChains],
  fallbacks: [
    { tool: 'complete_task', category: 'not_found', advice: 'Call list_tasks and use a task_id from its result.' },
  ],
});
const userId = fixtures.alice;
const session = { sessionId: 'agent-1', context: { userId } };

function show(step: string, r: InvokeResult): void {
  const m = r.metadata;
  console.log(`\n▶ ${step}`);
  console.log(
    `  ${r.status}${r.status === 'failed' ? ` — ${r.error.category}/${r.error.code}` : ''} in ${m.timing.actualDurationMs} ms (estimated ${m.timing.estimatedDurationMs} ms, ${m.timing.confidence} confidence)`,
  );
  if (m.context.tier)
    console.log(
      `  tier: ${m.context.tier}${m.context.wasEscalated ? ` (escalated from ${m.context.originalTier})` : ''}`,
    );
  if (m.suggestions.nextTools.length)
    console.log(`  next tools: ${m.suggestions.nextTools.map((s) => `${s.tool} (${s.reason})`).join('; ')}`);
  if (m.suggestions.relevantChains.length)
    console.log(`  relevant chains: ${m.suggestions.relevantChains.map((c) => c.chain).join(', ')}`);
  for (const a of m.advice) console.log(`  advice: ${a}`);
  if (r.status === 'failed')
    for (const a of r.error.alternatives) console.log(`  alternative: ${a.suggestion} — ${a.reason}`);
}

// The user: "I bought the milk — tick it off, and add 'Make pancakes'."
console.log(
  `Offered to the model at tier 'simple': ${registry
    .forComplexity('simple')
    .map((t) => t.name)
    .join(', ')} (~${registry.estimateTokens('simple')} tokens)`,
);

// 1. The model guesses an id without looking (a common mistake), twice.
for (const attempt of [1, 2]) {
  show(
    `complete_task with a guessed id (try ${attempt})`,
    await runner.invoke(
      'complete_task',
      { user_id: userId, task_id: '00000000-0000-4000-8000-000000000000' },
      { ...session, tier: 'simple' },
    ),
  );
}

// 2. It follows the advice: list first, then pick the task.
const listed = await runner.invoke<{ tasks: { task_id: string; title: string }[] }>(
  'list_tasks',
  { user_id: userId, status: 'pending' },
  { ...session, tier: 'simple' },
);
show('list_tasks', listed);
const milk = listed.status === 'completed' ? listed.output.tasks.find((t) => /milk/i.test(t.title)) : undefined;
if (milk)
  show(
    `complete_task '${milk.title}'`,
    await runner.invoke('complete_task', { user_id: userId, task_id: milk.task_id }, { ...session, tier: 'simple' }),
  );

// 3. Then it adds the new task (add_task is offered from the 'medium' tier up).
show(
  "add_task 'Make pancakes'",
  await runner.invoke('add_task', { user_id: userId, title: 'Make pancakes' }, { ...session, tier: 'simple' }),
);

// 4. Asking for help with a goal: which chains fit?
const ideas = runner.suggest('add_task', { sessionId: session.sessionId, goal: 'how am I doing on my tasks overall?' });
console.log(
  `\nFor the goal "how am I doing on my tasks overall?": ${ideas.relevantChains.map((c) => `${c.chain} — ${c.description}`).join(' | ')}`,
);

await runner.close();
