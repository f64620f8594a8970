import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createRunner,
  createToolRegistry,
  DefinitionError,
  taskChains,
  taskTools,
  type TierEscalationEvent,
} from 'chainkit';
import { FallbackAdvisor, STEP_BACK_ADVICE } from '../../src/guidance/fallback.js';
import { createMockInvoker, createTaskStore, fixtures } from 'chainkit/testing';

describe('suggestions', () => {
  const store = createTaskStore({ users: fixtures.users });
  const alice = { sessionId: 's', context: { userId: fixtures.alice } };

  it('learns a next tool after 5 successful transitions, not before, and not when it fails too often', async () => {
    const runner = createRunner({ invoker: store.invoker, tools: [...taskTools], chains: [...taskChains] });
    const learned = () => runner.suggest('add_task').nextTools.filter((s) => s.tool === 'complete_task');
    const add = (session: string) =>
      runner.invoke('add_task', { user_id: fixtures.alice, title: 'x' }, { sessionId: session });
    for (let i = 0; i < 5; i++) {
      expect(learned()).toEqual([]);
      const r = await add(`a${i}`);
      const id = r.status === 'completed' ? (r.output as { task: { task_id: string } }).task.task_id : '';
      await runner.invoke('complete_task', { user_id: fixtures.alice, task_id: id }, { sessionId: `a${i}` });
    }
    expect(learned()).toEqual([
      expect.objectContaining({ tool: 'complete_task', reason: expect.stringContaining('5 times, 100 %') }),
    ]);
    expect(runner.suggest('add_task').nextTools[0]!.tool).toBe('list_tasks'); // declared suggestions first

    const flaky = createRunner({ invoker: store.invoker, tools: [...taskTools] });
    for (let i = 0; i < 10; i++) {
      await flaky.invoke('add_task', { user_id: fixtures.alice, title: 'x' }, { sessionId: `f${i}` });
      // 7 of 10 fail (another user's task): success rate 0.3 ≤ 0.7
      const task = i < 3 ? store.tasks(fixtures.alice)[0]! : store.tasks(fixtures.bob)[0]!;
      await flaky.invoke('complete_task', { user_id: fixtures.alice, task_id: task.task_id }, { sessionId: `f${i}` });
    }
    expect(flaky.metrics.transitionsFrom('add_task').complete_task).toMatchObject({ count: 10, successRate: 0.3 });
    expect(flaky.suggest('add_task').nextTools.map((s) => s.tool)).not.toContain('complete_task');
  });

  it('ranks chains by goal words and session history, top 3, and puts them in result metadata', async () => {
    const runner = createRunner({ invoker: store.invoker, tools: [...taskTools], chains: [...taskChains] });
    expect(runner.suggest('list_tasks', { goal: 'please delete the old task' }).relevantChains[0]!.chain).toBe(
      'find_and_delete',
    );
    expect(runner.suggest('list_tasks', { goal: 'give me an overview of my progress' }).relevantChains[0]!.chain).toBe(
      'task_summary',
    );
    const r = await runner.invoke('list_tasks', { user_id: fixtures.alice, status: 'all' }, alice);
    expect(r.metadata.suggestions.relevantChains.length).toBeGreaterThan(0);
    expect(r.metadata.suggestions.relevantChains.length).toBeLessThanOrEqual(3);
  });
});

describe('fallback advice', () => {
  it('advises on the 2nd consecutive failure of a tool, not the 1st, and steps back at 5', async () => {
    const invoker = createMockInvoker({
      search: { error: Object.assign(new Error('slow'), { code: 'ETIMEDOUT' }) },
      other: { error: Object.assign(new Error('x'), { status: 404 }) },
    });
    const search = {
      name: 'search',
      description: 's',
      input: z.object({}),
      output: z.object({}),
      effect: 'read' as const,
      retry: false as const,
    };
    const { defineTool } = await import('chainkit');
    const runner = createRunner({
      invoker,
      tools: [defineTool(search), defineTool({ ...search, name: 'other' })],
      fallbacks: [{ tool: 'search', category: 'timeout', advice: 'Use quick_search for large queries.' }],
    });
    const s = { sessionId: 'adv' };
    expect((await runner.invoke('search', {}, s)).metadata.advice).toEqual([]);
    expect((await runner.invoke('search', {}, s)).metadata.advice).toEqual(['Use quick_search for large queries.']);
    await runner.invoke('other', {}, s);
    await runner.invoke('other', {}, s);
    const fifth = await runner.invoke('search', {}, s);
    expect(fifth.metadata.advice).toContain(STEP_BACK_ADVICE);
  });

  it('falls back from (tool, category) to (tool, *) to (*, category), resets on success, never throws', () => {
    const a = new FallbackAdvisor([{ tool: 'pay', category: '*', advice: 'Check the card.' }]);
    a.record('s', 'pay', 'internal');
    a.record('s', 'pay', 'internal');
    expect(a.advice('s', 'pay')).toEqual(['Check the card.']);
    a.record('s', 'pay', undefined);
    expect(a.advice('s', 'pay')).toEqual([]);
    a.record('s', 'ship', 'rate_limited');
    a.record('s', 'ship', 'rate_limited');
    expect(a.advice('s', 'ship')[0]).toMatch(/retryAfterMs/);
    expect(a.advice('unknown-session', 'x')).toEqual([]);
  });
});

describe('tool tiers', () => {
  const tiers = {
    simple: ['list_tasks'],
    medium: ['list_tasks', 'add_task', 'complete_task'],
    complex: 'all' as const,
  };

  it('rejects unknown tool names and levels', () => {
    expect(() => createToolRegistry([...taskTools], { tiers: { simple: ['fly'] } })).toThrow(DefinitionError);
    const registry = createToolRegistry([...taskTools], { tiers });
    expect(() => registry.forComplexity('huge' as never)).toThrow(DefinitionError);
  });

  it('produces function definitions whose JSON Schema zod can read back', () => {
    const registry = createToolRegistry([...taskTools], { tiers });
    const [openai] = registry.toJSONSchema('simple');
    expect(openai).toMatchObject({ name: 'list_tasks', parameters: { type: 'object', required: ['user_id'] } });
    const [anthropic] = registry.toJSONSchema('simple', { format: 'anthropic' });
    expect(anthropic).toHaveProperty('input_schema');
    for (const def of registry.toJSONSchema('complex')) {
      const back = z.fromJSONSchema((def as { parameters: Record<string, unknown> }).parameters as never);
      expect(back.safeParse({ user_id: 'not-a-uuid', title: 'x', task_id: 'y', status: 'all' }).success).toBe(false);
    }
    const schema = z.fromJSONSchema((openai as { parameters: Record<string, unknown> }).parameters as never);
    expect(schema.safeParse({ user_id: fixtures.alice, status: 'pending' }).success).toBe(true);
    expect(registry.estimateTokens('simple')).toBeLessThan(registry.estimateTokens('complex'));
  });

  it('escalates invoke across tiers, and finds nothing above complex', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const registry = createToolRegistry([...taskTools], {
      tiers: { ...tiers, complex: ['list_tasks', 'add_task', 'complete_task', 'update_task'] },
    });
    const runner = createRunner({ invoker: store.invoker, registry });
    const escalations: TierEscalationEvent[] = [];
    runner.events.on('tier:escalation', (e) => escalations.push(e));
    const plain = await runner.invoke('list_tasks', { user_id: fixtures.alice, status: 'all' }, { tier: 'simple' });
    expect(plain.metadata.context).toMatchObject({ tier: 'simple' });
    expect(plain.metadata.context.wasEscalated).toBeUndefined();
    const up = await runner.invoke('add_task', { user_id: fixtures.alice, title: 'x' }, { tier: 'simple' });
    expect(up.metadata.context).toMatchObject({ tier: 'medium', wasEscalated: true, originalTier: 'simple' });
    const top = await runner.invoke(
      'update_task',
      { user_id: fixtures.alice, task_id: store.tasks(fixtures.alice)[0]!.task_id, title: 'y' },
      { tier: 'simple' },
    );
    expect(top.metadata.context).toMatchObject({ tier: 'complex', wasEscalated: true });
    const none = await runner.invoke(
      'delete_task',
      { user_id: fixtures.alice, task_id: store.tasks(fixtures.alice)[0]!.task_id },
      { tier: 'simple' },
    );
    expect(none.status === 'failed' && none.error).toMatchObject({ category: 'not_found', code: 'not_in_tier' });
    expect(escalations).toEqual([
      { tool: 'add_task', from: 'simple', to: 'medium' },
      { tool: 'update_task', from: 'simple', to: 'complex' },
    ]);
  });

  it('offers only tools whose breaker is closed', async () => {
    const invoker = createMockInvoker({ list_tasks: { error: Object.assign(new Error('down'), { status: 503 }) } });
    const registry = createToolRegistry([...taskTools], { tiers });
    const runner = createRunner({
      invoker,
      registry,
      breaker: { threshold: 1 },
      retry: { unavailable: { retries: 0, minDelayMs: 0, factor: 1, maxDelayMs: 0 } },
    });
    expect((await runner.toolsFor(registry, 'medium')).map((t) => t.name)).toEqual([
      'list_tasks',
      'add_task',
      'complete_task',
    ]);
    await runner.invoke(
      'list_tasks',
      { user_id: fixtures.alice, status: 'all' },
      { context: { userId: fixtures.alice } },
    );
    expect((await runner.toolsFor(registry, 'medium')).map((t) => t.name)).toEqual(['add_task', 'complete_task']);
  });
});

describe('guidance reaches the logger', () => {
  const logger = () => {
    const lines: { level: string; obj: Record<string, unknown>; msg?: string }[] = [];
    const at = (level: string) => (obj: object, msg?: string) => {
      lines.push({ level, obj: obj as Record<string, unknown>, msg });
    };
    return { lines, logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } };
  };

  it('logs fallback advice at warn with the run id and tool', async () => {
    const { lines, logger: log } = logger();
    const invoker = createMockInvoker({ search: { error: Object.assign(new Error('gone'), { status: 404 }) } });
    const { defineTool } = await import('chainkit');
    const search = defineTool({
      name: 'search',
      description: 's',
      input: z.object({}),
      output: z.object({}),
      effect: 'read',
    });
    const runner = createRunner({
      invoker,
      tools: [search],
      logger: log,
      fallbacks: [{ tool: 'search', category: 'not_found', advice: 'List first.' }],
    });
    await runner.invoke('search', {}, { sessionId: 'adv' });
    expect(lines.filter((l) => l.level === 'warn')).toEqual([]);
    const second = await runner.invoke('search', {}, { sessionId: 'adv' });
    const warned = lines.filter((l) => l.level === 'warn');
    expect(warned).toEqual([
      expect.objectContaining({
        obj: expect.objectContaining({
          runId: second.trace.runId,
          sessionId: 'adv',
          tool: 'search',
          category: 'not_found',
          advice: ['List first.'],
        }),
      }),
    ]);
    expect(warned[0]!.msg).toContain('List first.');
  });

  it('logs a tier escalation at info', async () => {
    const { lines, logger: log } = logger();
    const store = createTaskStore({ users: fixtures.users });
    const registry = createToolRegistry([...taskTools], {
      tiers: { simple: ['list_tasks'], medium: ['list_tasks', 'add_task'], complex: 'all' },
    });
    const runner = createRunner({ invoker: store.invoker, registry, logger: log });
    const r = await runner.invoke('add_task', { user_id: fixtures.alice, title: 'Escalate me' }, { tier: 'simple' });
    expect(lines.filter((l) => l.level === 'info')).toEqual([
      expect.objectContaining({ obj: { runId: r.trace.runId, tool: 'add_task', from: 'simple', to: 'medium' } }),
    ]);
  });
});

describe('tools named like Object.prototype members', () => {
  it('are learned, estimated and suggested like any other tool', async () => {
    const { defineTool } = await import('chainkit');
    const make = (name: string) =>
      defineTool({ name, description: name, input: z.object({}), output: z.object({}), effect: 'read' });
    const invoker = createMockInvoker({ constructor: { ok: {} }, toString: { ok: {} } });
    const runner = createRunner({ invoker, tools: [make('constructor'), make('toString')] });
    for (let i = 0; i < 5; i++) {
      await runner.invoke('constructor', {}, { sessionId: `o${i}` });
      await runner.invoke('toString', {}, { sessionId: `o${i}` });
    }
    expect(runner.suggest('constructor').nextTools).toEqual([
      expect.objectContaining({ tool: 'toString', reason: expect.stringContaining('5 times') }),
    ]);
    expect(runner.metrics.chainSummary().entryTools).toEqual({ constructor: 5 });
    expect(runner.timing.estimate('toString').samples).toBe(5);
    expect(Object.keys(runner.timing.export().tools).sort()).toEqual(['constructor', 'toString']);
    expect(() => createTaskStore().failNext('constructor', { status: 'error', error: 'x' })).toThrow(TypeError);
  });

  it('round-trip through timing export/import, even as __proto__ in stored data', () => {
    const runner = createRunner({ invoker: createMockInvoker({}) });
    const data = JSON.parse(
      '{"version":1,"tools":{"__proto__":[{"durationMs":5,"complexity":1}],"constructor":[{"durationMs":7,"complexity":1}]}}',
    );
    runner.timing.import(data);
    expect(runner.timing.estimate('__proto__').estimatedDurationMs).toBe(5);
    const out = runner.timing.export();
    expect(Object.keys(out.tools).sort()).toEqual(['__proto__', 'constructor']);
    expect(JSON.parse(JSON.stringify(out)).tools.constructor).toEqual([{ durationMs: 7, complexity: 1 }]);
  });
});
