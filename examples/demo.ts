// `npm run demo`: the built-in task chains on the in-memory backend, with a few transient failures.
import {
  createRunner,
  findAndComplete,
  findAndDelete,
  findAndUpdate,
  formatTrace,
  Task,
  taskChains,
  taskSummary,
  taskTools,
  type RunResult,
} from 'chainkit';
import { createTaskStore, fixtures } from 'chainkit/testing';

const store = createTaskStore({ users: fixtures.users });
const runner = createRunner({ invoker: store.invoker, tools: [...taskTools], chains: [...taskChains] });
const alice = { context: { userId: fixtures.alice }, sessionId: 'demo-session' };

const bold = (text: string): string => (process.stdout.isTTY ? `\x1b[1m${text}\x1b[0m` : text);
const title = (text: string): void =>
  console.log(`\n${bold(`── ${text} ${'─'.repeat(Math.max(0, 70 - text.length))}`)}`);
const show = (r: RunResult): void => {
  if (r.status === 'completed') console.log('  completed →', JSON.stringify(r.output));
  if (r.status === 'failed') console.log(`  failed: ${r.error.category}/${r.error.code} — "${r.error.userMessage}"`);
  if (r.status === 'declined') console.log(`  declined at step ${r.step}`);
  console.log(formatTrace(r.trace).replace(/^/gm, '  '));
};

runner.events.on('step:retry', (e) =>
  console.log(`  ↻ ${e.tool} failed (${e.category}/${e.code}), retry ${e.attempt} in ${e.delayMs} ms`),
);

title('1. "How am I doing?" — taskSummary runs two list_tasks calls concurrently');
show(await runner.run(taskSummary, {}, alice));

title('2. "Rename the dentist task" — the update hits a transient database error first');
store.failNext('update_task', { status: 'error', error: 'database_error', message: 'deadlock detected' });
show(await runner.run(findAndUpdate, { match: 'dentist', title: 'Dentist at 3pm' }, alice));

title('3. "Mark buy as done" — two tasks match, so the agent must ask which');
const amb = await runner.run(findAndComplete, { match: 'buy' }, alice);
show(amb);
// Candidates are data from outside (`unknown[]`): read them through the Task schema, not a cast.
if (amb.status === 'failed') for (const c of amb.error.candidates ?? []) console.log(`    • ${Task.parse(c).title}`);

title('4. "Mark buy milk as done" — the list call is unavailable once (HTTP 503), then succeeds');
store.failNext('list_tasks', { throw: Object.assign(new Error('Service Unavailable'), { status: 503 }) });
show(await runner.run(findAndComplete, { match: 'buy milk' }, alice));

title('5. "Make task 3 high priority, with a note" — picked by position; only those fields change');
show(await runner.run(findAndUpdate, { match: 'task 3', priority: 'high', description: 'Call on Sunday' }, alice));

title('6. "Mark buy milk as done" again — it already is, so nothing is written');
const again = await runner.run(findAndComplete, { match: 'buy milk' }, alice);
if (again.status === 'completed')
  console.log(`  '${again.output.title}' already_completed: ${again.output.already_completed}`);

title('7. "Add: pay rent", sent twice — the identical second add returns the first task');
const addRent = (text: string) =>
  runner.invoke<{ task: { task_id: string } }>('add_task', { user_id: fixtures.alice, title: text }, alice);
for (const text of ['Pay rent', ' pay  RENT ']) {
  const r = await addRent(text);
  console.log(
    `  add '${text}' → ${r.trace.steps[0]!.status}, task ${r.status === 'completed' ? r.output.task.task_id.slice(0, 8) : r.error.code}`,
  );
}

title('8. "Delete my grocery task" — stops for confirmation before the destructive step');
const gate = await runner.run(findAndDelete, { match: 'groceries' }, alice);
if (gate.status !== 'awaiting_confirmation') throw new Error(`expected a confirmation, got ${gate.status}`);
console.log(`  awaiting confirmation: "${gate.confirmation.prompt}"`);
console.log(`  resume token: ${gate.resumeToken.slice(0, 24)}… (expires ${gate.confirmation.expiresAt})`);
console.log('  the user clicks "yes" (twice, on a flaky connection):');
const [first, second] = await Promise.all([
  runner.resume(gate.resumeToken, { approved: true }, alice),
  runner.resume(gate.resumeToken, { approved: true }, alice),
]);
show(first);
console.log(
  `  second click: ${second.status === 'failed' ? `${second.error.category}/${second.error.code}` : second.status} — deleted once, not twice`,
);

title("9. Alice's tasks now");
for (const t of store.tasks(fixtures.alice)) console.log(`  ${t.completed ? '☑' : '☐'} ${t.title} (${t.priority})`);
const after = await runner.run(taskSummary, {}, alice);
if (after.status === 'completed') console.log(`  completion rate: ${after.output.completion_rate} %`);

await runner.close();

// `npm run demo -- --inspect`: then serve the inspector on the same task chains (examples/inspector.ts).
if (process.argv.includes('--inspect')) {
  title('10. The inspector');
  await import('./inspector.js');
}
