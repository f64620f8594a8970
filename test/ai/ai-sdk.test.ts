import { generateText, stepCountIs, type ModelMessage } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, findAndDelete, memoryRunStore, taskSummary, type ConfirmationRequestedEvent } from 'chainkit';
import { asAiSdkTool } from 'chainkit/ai';
import { createTaskStore, fixtures } from 'chainkit/testing';
import { taskRunners, transformingChain } from '../helpers.js';

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

/** The AI SDK's mock model, scripted: call `toolName` with `input` first, then answer in text once a tool result is in the prompt. */
function scriptedModel(toolName: string, input: unknown): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      const last = prompt.at(-1)!;
      if (last.role === 'tool') {
        const part = last.content.find((p) => p.type === 'tool-result');
        const text =
          part && part.output.type === 'json' ? `Done: ${JSON.stringify(part.output.value).slice(0, 200)}` : 'Done.';
        return {
          content: [{ type: 'text', text }],
          finishReason: { unified: 'stop', raw: 'stop' },
          usage,
          warnings: [],
        };
      }
      return {
        content: [{ type: 'tool-call', toolCallId: 'call-1', toolName, input: JSON.stringify(input) }],
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage,
        warnings: [],
      };
    },
  });
}

const setup = taskRunners();

describe('asAiSdkTool', () => {
  it('runs a chain the model calls, with the trusted context from experimental_context', async () => {
    const { runner } = setup();
    const model = scriptedModel('task_summary', {});
    const result = await generateText({
      model,
      prompt: 'How am I doing?',
      stopWhen: stepCountIs(3),
      tools: {
        task_summary: asAiSdkTool(runner, taskSummary, { context: (c: { userId: string }) => ({ userId: c.userId }) }),
      },
      experimental_context: { userId: fixtures.bob },
    });
    const output = result.steps[0]!.toolResults[0]!.output as { status: string; output: { total: number } };
    expect(output).toMatchObject({ status: 'completed', output: { total: 2, pending: 2 } });
    expect(result.text).toContain('"total":2');
    // The model was offered the chain's input schema.
    expect(model.doGenerateCalls[0]!.tools).toEqual([
      expect.objectContaining({ type: 'function', name: 'task_summary', description: taskSummary.description }),
    ]);
  });

  it("parses the model's input once: a transform in the chain's input schema runs once", async () => {
    const { runner, chain, seen } = transformingChain();
    const result = await generateText({
      model: scriptedModel('save_it', { n: '21' }),
      prompt: 'Save 21',
      stopWhen: stepCountIs(3),
      tools: { save_it: asAiSdkTool(runner, chain) },
    });
    expect(result.steps[0]!.toolResults[0]!.output).toMatchObject({ status: 'completed' });
    expect(seen).toEqual([{ n: 42 }]);
  });

  it('a gated chain called with input its schema refuses runs no step (needsApproval is asked only with checked input)', async () => {
    const { store, runner } = setup();
    const result = await generateText({
      model: scriptedModel('find_and_delete', { match: 42 }),
      prompt: 'Delete task 42',
      stopWhen: stepCountIs(2),
      tools: { find_and_delete: asAiSdkTool(runner, findAndDelete, { context: { userId: fixtures.alice } }) },
    });
    expect(result.content.some((p) => p.type === 'tool-approval-request')).toBe(false);
    expect(store.callCount.list_tasks ?? 0).toBe(0);
    expect(store.callCount.delete_task ?? 0).toBe(0);
  });

  it("reads the tool context from v7's `context` (the tool's `toolsContext` entry) or v6's `experimental_context`", async () => {
    const { runner } = setup();
    const seen: unknown[] = [];
    const tool = asAiSdkTool(runner, taskSummary, {
      context: (c: { userId: string }) => (seen.push(c), { userId: c.userId }),
    });
    const v7 = await tool.execute({}, { toolCallId: 'v7', messages: [], context: { userId: fixtures.bob } });
    const v6 = await tool.execute(
      {},
      { toolCallId: 'v6', messages: [], experimental_context: { userId: fixtures.alice } },
    );
    expect(seen).toEqual([{ userId: fixtures.bob }, { userId: fixtures.alice }]);
    expect(v7).toMatchObject({ status: 'completed', output: { total: 2 } });
    expect(v6).toMatchObject({ status: 'completed', output: { total: 5 } });
  });

  it('passes contextSchema on (v7 validates toolsContext with it; v6 ignores it) and types the context function from it', async () => {
    const { runner } = setup();
    const contextSchema = z.object({ userId: z.string() });
    const tool = asAiSdkTool(runner, taskSummary, { contextSchema, context: (c) => ({ userId: c.userId }) });
    expect(tool.contextSchema).toBe(contextSchema);
    expect('contextSchema' in asAiSdkTool(runner, taskSummary, { context: { userId: fixtures.bob } })).toBe(false);
    const result = await generateText({
      model: scriptedModel('task_summary', {}),
      prompt: 'How am I doing?',
      tools: { task_summary: tool },
      experimental_context: { userId: fixtures.bob },
    });
    expect(result.steps[0]!.toolResults[0]!.output).toMatchObject({ status: 'completed', output: { total: 2 } });
  });

  it("a gate is the SDK's tool approval: nothing past it runs until the call is approved", async () => {
    const { store, runner } = setup();
    const asked: ConfirmationRequestedEvent[] = [];
    runner.events.on('confirmation:requested', (e) => asked.push(e));
    const tools = { find_and_delete: asAiSdkTool(runner, findAndDelete, { context: { userId: fixtures.alice } }) };
    const messages: ModelMessage[] = [{ role: 'user', content: 'Delete my dentist task' }];

    const first = await generateText({
      model: scriptedModel('find_and_delete', { match: 'dentist' }),
      messages,
      tools,
      stopWhen: stepCountIs(3),
    });
    const request = first.content.find((p) => p.type === 'tool-approval-request');
    expect(request).toMatchObject({ toolCall: { toolCallId: 'call-1', toolName: 'find_and_delete' } });
    expect(asked).toEqual([
      expect.objectContaining({ runId: 'call-1', prompt: expect.stringContaining('Dentist appointment') }),
    ]);
    expect(store.tasks(fixtures.alice).map((t) => t.title)).toContain('Dentist appointment');
    expect(store.callCount.delete_task ?? 0).toBe(0);

    messages.push(...first.response.messages, {
      role: 'tool',
      content: [{ type: 'tool-approval-response', approvalId: request!.approvalId, approved: true }],
    });
    const second = await generateText({
      model: scriptedModel('find_and_delete', { match: 'dentist' }),
      messages,
      tools,
      stopWhen: stepCountIs(3),
    });
    expect(store.tasks(fixtures.alice).map((t) => t.title)).not.toContain('Dentist appointment');
    expect(store.callCount.delete_task).toBe(1);
    // The approved call runs before the model's next step: its result leads the new messages.
    const toolMessage = second.response.messages[0]!;
    const toolResult =
      toolMessage.role === 'tool' ? toolMessage.content.find((p) => p.type === 'tool-result') : undefined;
    expect(toolResult?.output).toMatchObject({
      type: 'json',
      value: { status: 'completed', output: { title: 'Dentist appointment', deleted: true } },
    });
    expect(second.text).toContain('"deleted":true');
    // The approved execution passes the same gate again, so the question is emitted a second time.
    expect(asked.map((e) => [e.runId, e.step])).toEqual([
      ['call-1', 'delete'],
      ['call-1', 'delete'],
    ]);
    expect(store.callCount.list_tasks).toBe(2); // up to the gate once, then the approved run
  });

  it('with a run store, the approved call goes on from the gate its run is parked at (it used to be declined there, and never went on)', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const runner = createRunner({ invoker: store.invoker, stores: { runs: memoryRunStore() } });
    const tools = { find_and_delete: asAiSdkTool(runner, findAndDelete, { context: { userId: fixtures.alice } }) };
    const messages: ModelMessage[] = [{ role: 'user', content: 'Delete my dentist task' }];
    const model = () => scriptedModel('find_and_delete', { match: 'dentist' });
    const first = await generateText({ model: model(), messages, tools, stopWhen: stepCountIs(3) });
    const request = first.content.find((p) => p.type === 'tool-approval-request');
    expect(await runner.getRun('call-1')).toMatchObject({ status: 'awaiting_confirmation' });
    messages.push(...first.response.messages, {
      role: 'tool',
      content: [{ type: 'tool-approval-response', approvalId: request!.approvalId, approved: true }],
    });
    const second = await generateText({ model: model(), messages, tools, stopWhen: stepCountIs(3) });
    expect(second.text).toContain('"deleted":true');
    expect(store.callCount.delete_task).toBe(1);
    expect(store.callCount.list_tasks).toBe(1); // decided where it parked, not run again
    await runner.close();
  });

  it("a context function that throws fails the call without showing the model the error's text", async () => {
    const { runner } = setup();
    const tools = {
      task_summary: asAiSdkTool(runner, taskSummary, {
        context: () => {
          throw new Error('session store redis://admin:S3cr3t@10.0.0.1 unreachable');
        },
      }),
    };
    const r = await generateText({
      model: scriptedModel('task_summary', {}),
      prompt: 'Sum up',
      tools,
      stopWhen: stepCountIs(3),
    });
    const seen = JSON.stringify(r.response.messages);
    expect(seen).toContain('context function failed');
    expect(seen).not.toMatch(/S3cr3t|redis:/);
  });

  it('a denied approval deletes nothing', async () => {
    const { store, runner } = setup();
    const tools = { find_and_delete: asAiSdkTool(runner, findAndDelete, { context: { userId: fixtures.alice } }) };
    const messages: ModelMessage[] = [{ role: 'user', content: 'Delete my milk task' }];
    const first = await generateText({ model: scriptedModel('find_and_delete', { match: 'milk' }), messages, tools });
    const request = first.content.find((p) => p.type === 'tool-approval-request')!;
    messages.push(...first.response.messages, {
      role: 'tool',
      content: [{ type: 'tool-approval-response', approvalId: request.approvalId, approved: false }],
    });
    await generateText({
      model: scriptedModel('find_and_delete', { match: 'milk' }),
      messages,
      tools,
      stopWhen: stepCountIs(3),
    });
    expect(store.tasks(fixtures.alice).map((t) => t.title)).toContain('Buy milk');
    expect(store.callCount.delete_task ?? 0).toBe(0);
  });

  it('a call that fails before its gate needs no approval and tells the model why', async () => {
    const { runner } = setup();
    const tools = { find_and_delete: asAiSdkTool(runner, findAndDelete, { context: { userId: fixtures.alice } }) };
    const result = await generateText({
      model: scriptedModel('find_and_delete', { match: 'buy' }),
      prompt: 'Delete the buy task',
      tools,
      stopWhen: stepCountIs(3),
    });
    expect(result.content.some((p) => p.type === 'tool-approval-request')).toBe(false);
    expect(result.steps[0]!.toolResults[0]!.output).toMatchObject({
      status: 'failed',
      error: { category: 'ambiguous' },
    });
  });

  it('a gate first reached when the SDK executes (the data changed since needsApproval) is declined, not passed unasked', async () => {
    const store = createTaskStore({ users: fixtures.users });
    let lists = 0;
    // The first list (needsApproval's run) misses the task: that run fails before the gate, so the SDK executes without asking.
    const runner = createRunner({
      invoker: (call) =>
        call.tool === 'list_tasks' && ++lists === 1 ? Promise.resolve({ tasks: [] }) : store.invoker(call),
    });
    const tools = { find_and_delete: asAiSdkTool(runner, findAndDelete, { context: { userId: fixtures.alice } }) };
    const result = await generateText({
      model: scriptedModel('find_and_delete', { match: 'milk' }),
      prompt: 'Delete my milk task',
      tools,
      stopWhen: stepCountIs(3),
    });
    expect(result.content.some((p) => p.type === 'tool-approval-request')).toBe(false);
    expect(result.steps[0]!.toolResults[0]!.output).toMatchObject({
      status: 'declined',
      message: expect.stringMatching(/not asked for this call; call the tool again/),
    });
    expect(store.callCount.delete_task ?? 0).toBe(0);
    await runner.close();
  });

  it('rejects what is not a runner or a chain', () => {
    expect(() => asAiSdkTool({} as never, taskSummary)).toThrow(/createRunner/);
    const { runner } = setup();
    expect(() => asAiSdkTool(runner, {} as never)).toThrow(/defineChain/);
  });
});

describe('examples/ai-sdk-agent.ts', () => {
  it('runs the approval round trip end to end', async () => {
    const { execFile } = await import('node:child_process');
    const { fileURLToPath } = await import('node:url');
    const script = fileURLToPath(new URL('../../examples/ai-sdk-agent.ts', import.meta.url));
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ['--import', 'tsx', script], { timeout: 30_000 }, (error, out) =>
        error ? reject(error) : resolve(out),
      ),
    );
    expect(stdout).toContain("agent: Are you sure you want to delete 'Dentist appointment'?");
    expect(stdout).toContain('agent: Deleted "Dentist appointment".');
    expect(stdout).not.toMatch(/tasks now:.*Dentist/);
  });
});
