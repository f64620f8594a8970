// The approvals inbox: runs parked at a confirmation gate, listed with the step and the question,
// a page at a time. Run: npx tsx examples/approvals-inbox.ts   (memory store: runs by itself, exits)
import { createRunner, findAndDelete, memoryIdempotencyStore, memoryRunStore, taskChains, taskTools } from 'chainkit';
import { createTaskStore, fixtures } from 'chainkit/testing';

const tasks = createTaskStore({ users: fixtures.users });
const idempotency = memoryIdempotencyStore();
// With redisStores(...) or postgresStores(...) instead, any instance sharing the stores sees the same inbox.
const runner = createRunner({
  invoker: tasks.invoker,
  tools: [...taskTools],
  chains: [...taskChains],
  secret: 'example-secret-change-me-please!',
  stores: { idempotency, runs: memoryRunStore({ idempotency }) },
});
const context = { userId: fixtures.alice };

// Three agent runs stop at the delete gate, waiting for someone to approve: two of Alice's, one of Bob's.
await runner.run(findAndDelete, { match: 'groceries' }, { context });
await runner.run(findAndDelete, { match: 'dentist' }, { context });
await runner.run(findAndDelete, { match: 'bike' }, { context: { userId: fixtures.bob } });

// The operator's inbox, one run per page to show the cursor.
let cursor: string | undefined;
do {
  const page = await runner.listRuns({ status: 'awaiting_confirmation', limit: 1, ...(cursor && { cursor }) });
  for (const run of page.runs) {
    console.log(
      `${new Date(run.startedAt).toISOString()}  ${run.chain}  ${run.runId}  step ${run.awaiting?.step}: ${run.awaiting?.question}`,
    );
  }
  cursor = page.cursor;
} while (cursor);

// Alice's own inbox (GET /my/approvals): only the runs started with her context.
const mine = await runner.listRuns({ status: 'awaiting_confirmation', context });
console.log(`waiting for Alice: ${mine.runs.map((run) => run.awaiting?.question).join(' | ')}`);

// Everything that ended badly in the last hour, newest first.
const failed = await runner.listRuns({ status: ['failed', 'declined'], since: Date.now() - 3_600_000 });
console.log(`failed or declined in the last hour: ${failed.runs.length}`);

await runner.close();
