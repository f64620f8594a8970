// A chain offered to a Vercel AI SDK agent, with the confirmation gate as the SDK's tool approval.
// The model is the AI SDK's own mock (no network, no API key): swap in openai('gpt-4.1') or any
// provider model and nothing else changes.
// Run: npx tsx examples/ai-sdk-agent.ts
import { generateText, stepCountIs, type ModelMessage } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { createRunner, findAndDelete, taskSummary } from 'chainkit';
import { asAiSdkTool } from 'chainkit/ai';
import { createTaskStore, fixtures } from 'chainkit/testing';

const store = createTaskStore({ users: fixtures.users });
const runner = createRunner({ invoker: store.invoker });
const userId = fixtures.alice; // from your session, never from the model

// The question the gate asks, by tool call id, to show beside the approval button.
const questions = new Map<string, string>();
runner.events.on('confirmation:requested', (e) => questions.set(e.runId, e.prompt));

const tools = {
  find_and_delete: asAiSdkTool(runner, findAndDelete, { context: { userId } }),
  task_summary: asAiSdkTool(runner, taskSummary, { context: { userId } }),
};

/** One field of a JSON value, if it is an object that has it. */
const field = (value: unknown, key: string): unknown =>
  typeof value === 'object' && value !== null && Object.hasOwn(value, key)
    ? Object.getOwnPropertyDescriptor(value, key)?.value
    : undefined;

// A scripted stand-in for a real model: it calls find_and_delete, then reports the tool result.
const usage = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 },
};
const model = new MockLanguageModelV3({
  doGenerate: async ({ prompt }) => {
    const last = prompt.at(-1)!;
    const result = last.role === 'tool' ? last.content.find((p) => p.type === 'tool-result') : undefined;
    if (result) {
      // The tool result is the chain's ModelResult as JSON: read it as data, without assuming its shape.
      const value = result.output.type === 'json' ? result.output.value : undefined;
      const status = field(value, 'status');
      const text =
        status === 'completed'
          ? `Deleted "${String(field(field(value, 'output'), 'title'))}".`
          : `That did not work (${String(status ?? result.output.type)}).`;
      return { content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
    }
    return {
      content: [
        {
          type: 'tool-call',
          toolCallId: 'call_1',
          toolName: 'find_and_delete',
          input: JSON.stringify({ match: 'dentist' }),
        },
      ],
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage,
      warnings: [],
    };
  },
});

const request = 'Please delete my dentist task.';
const messages: ModelMessage[] = [{ role: 'user', content: request }];
console.log(`user:  ${request}`);

// Turn 1: the model calls the chain; it stops at the gate and the SDK asks for approval.
const first = await generateText({ model, messages, tools, stopWhen: stepCountIs(5) });
messages.push(...first.response.messages);
for (const part of first.content) {
  if (part.type !== 'tool-approval-request') continue;
  const question = questions.get(part.toolCall.toolCallId) ?? `Run ${part.toolCall.toolName}?`;
  console.log(`agent: ${question}  [approval ${part.approvalId}]`);
  console.log('user:  yes');
  messages.push({
    role: 'tool',
    content: [{ type: 'tool-approval-response', approvalId: part.approvalId, approved: true }],
  });
}

// Turn 2: the approved call runs past the gate, and the model reports the result.
const second = await generateText({ model, messages, tools, stopWhen: stepCountIs(5) });
console.log(`agent: ${second.text}`);
console.log(
  `\nAlice's tasks now: ${store
    .tasks(userId)
    .map((t) => t.title)
    .join(', ')}`,
);
await runner.close();
