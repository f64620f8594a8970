import {
  Agent,
  run,
  setTracingDisabled,
  Usage,
  type AgentInputItem,
  type Model,
  type ModelRequest,
  type ModelResponse,
} from '@openai/agents';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createRunner,
  defineChain,
  defineTool,
  findAndDelete,
  functionInvoker,
  memoryRunStore,
  ref,
  taskSummary,
  type ConfirmationRequestedEvent,
} from 'chainkit';
import { z } from 'zod';
import { asOpenAIAgentsTool } from 'chainkit/openai-agents';
import { createTaskStore, fixtures } from 'chainkit/testing';
import { taskRunners } from '../helpers.js';

beforeAll(() => setTracingDisabled(true)); // the SDK would export traces to OpenAI; nothing here leaves the machine

/** A scripted Model (the SDK's extension point for models): call `tool` once, then report its output. */
class ScriptedModel implements Model {
  readonly requests: ModelRequest[] = [];
  constructor(
    private readonly tool: string,
    private readonly args: unknown,
  ) {}
  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    const items = typeof request.input === 'string' ? [] : (request.input as AgentInputItem[]);
    const result = items.find((i) => i.type === 'function_call_result');
    if (result) {
      const output = (result as { output: { type: string; text?: string } | string }).output;
      const text = typeof output === 'string' ? output : (output.text ?? JSON.stringify(output));
      return {
        usage: new Usage(),
        output: [
          {
            type: 'message',
            id: 'msg_1',
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text: `Result: ${text}` }],
          },
        ],
      };
    }
    return {
      usage: new Usage(),
      output: [
        {
          type: 'function_call',
          id: 'fc_1',
          callId: 'call_1',
          name: this.tool,
          arguments: JSON.stringify(this.args),
          status: 'completed',
        },
      ],
    };
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('not used in these tests');
  }
}

const setup = taskRunners();

describe('asOpenAIAgentsTool', () => {
  it('runs a chain the agent calls, with the trusted context from the run context', async () => {
    const { runner } = setup();
    const model = new ScriptedModel('task_summary', {});
    const agent = new Agent<{ userId: string }>({
      name: 'Tasks',
      instructions: 'Help with tasks',
      model,
      tools: [asOpenAIAgentsTool(runner, taskSummary, { context: (c: { userId: string }) => ({ userId: c.userId }) })],
    });
    const result = await run(agent, 'How am I doing?', { context: { userId: fixtures.bob } });
    expect(result.finalOutput).toContain('"total":2');
    expect(model.requests[0]!.tools).toEqual([
      expect.objectContaining({ type: 'function', name: 'task_summary', description: taskSummary.description }),
    ]);
  });

  it("checks the arguments needsApproval is given (the SDK hands it the model's JSON unchecked): nothing runs on bad input", async () => {
    const refunds: unknown[] = [];
    const refund = defineTool({
      name: 'refund',
      description: 'Refunds.',
      input: z.object({ cents: z.number() }),
      output: z.object({ ok: z.boolean() }),
      idempotent: true,
    });
    const notify = defineTool({
      name: 'notify',
      description: 'Notifies.',
      input: z.object({}),
      output: z.object({ ok: z.boolean() }),
      idempotent: true,
    });
    const refundThenNotify = defineChain({
      name: 'refund_then_notify',
      description: 'Refunds at most 100 cents, then notifies after approval.',
      input: z.object({ cents: z.number().int().min(1).max(100) }),
      steps: [
        { id: 'refund', tool: refund, input: { cents: ref('input', 'cents') } },
        { id: 'notify', tool: notify, input: {}, confirm: { prompt: 'Notify the customer?' } },
      ],
    });
    const runner = createRunner({
      invoker: functionInvoker({
        refund: (input: unknown) => (refunds.push(input), { ok: true }),
        notify: () => ({ ok: true }),
      }),
    });
    try {
      const agent = new Agent({
        name: 'Refunds',
        model: new ScriptedModel('refund_then_notify', { cents: 1_000_000 }),
        tools: [asOpenAIAgentsTool(runner, refundThenNotify)],
      });
      await run(agent, 'Refund me', { maxTurns: 2 }).catch(() => undefined);
      expect(refunds).toEqual([]);
    } finally {
      await runner.close();
    }
  });

  it('a gate is a run interruption: the chain goes past it only after state.approve', async () => {
    const { store, runner } = setup();
    const asked: ConfirmationRequestedEvent[] = [];
    runner.events.on('confirmation:requested', (e) => asked.push(e));
    const agent = new Agent({
      name: 'Tasks',
      model: new ScriptedModel('find_and_delete', { match: 'dentist' }),
      tools: [asOpenAIAgentsTool(runner, findAndDelete, { context: { userId: fixtures.alice } })],
    });

    const first = await run(agent, 'Delete my dentist task');
    expect(first.interruptions).toHaveLength(1);
    expect(first.interruptions[0]).toMatchObject({
      type: 'tool_approval_item',
      rawItem: { callId: 'call_1', name: 'find_and_delete' },
    });
    expect(asked).toEqual([
      expect.objectContaining({ runId: 'call_1', prompt: expect.stringContaining('Dentist appointment') }),
    ]);
    expect(store.callCount.delete_task ?? 0).toBe(0);

    first.state.approve(first.interruptions[0]!);
    const second = await run(agent, first.state);
    expect(second.interruptions ?? []).toHaveLength(0);
    expect(store.callCount.delete_task).toBe(1);
    expect(store.tasks(fixtures.alice).map((t) => t.title)).not.toContain('Dentist appointment');
    expect(second.finalOutput).toContain('"deleted":true');
    expect(asked.map((e) => [e.runId, e.step])).toEqual([
      ['call_1', 'delete'],
      ['call_1', 'delete'],
    ]);
  });

  it('with a run store, the approved call goes on from the gate its run is parked at (it used to be declined there, and never went on)', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const runner = createRunner({ invoker: store.invoker, stores: { runs: memoryRunStore() } });
    const agent = new Agent({
      name: 'Tasks',
      model: new ScriptedModel('find_and_delete', { match: 'dentist' }),
      tools: [asOpenAIAgentsTool(runner, findAndDelete, { context: { userId: fixtures.alice } })],
    });
    const first = await run(agent, 'Delete my dentist task');
    expect(first.interruptions).toHaveLength(1);
    expect(await runner.getRun('call_1')).toMatchObject({ status: 'awaiting_confirmation' });
    first.state.approve(first.interruptions[0]!);
    const second = await run(agent, first.state);
    expect(second.finalOutput).toContain('"deleted":true');
    expect(store.callCount.delete_task).toBe(1);
    expect(store.callCount.list_tasks).toBe(1); // decided where it parked, not run again
    expect(await runner.getRun('call_1')).toMatchObject({ status: 'completed' });
    await runner.close();
  });

  it('a rejected approval deletes nothing', async () => {
    const { store, runner } = setup();
    const agent = new Agent({
      name: 'Tasks',
      model: new ScriptedModel('find_and_delete', { match: 'milk' }),
      tools: [asOpenAIAgentsTool(runner, findAndDelete, { context: { userId: fixtures.alice } })],
    });
    const first = await run(agent, 'Delete my milk task');
    first.state.reject(first.interruptions[0]!);
    await run(agent, first.state);
    expect(store.callCount.delete_task ?? 0).toBe(0);
    expect(store.tasks(fixtures.alice).map((t) => t.title)).toContain('Buy milk');
  });
});
