import { describe, expect, it } from 'vitest';
import {
  classifyComplexity,
  createRunner,
  createToolRegistry,
  DefinitionError,
  taskTools,
  type TierLevel,
} from 'chainkit';
import { createTaskStore, fixtures } from 'chainkit/testing';

// The rule of classifyComplexity, message by message (at least 30).
const TABLE: [string | undefined, TierLevel][] = [
  // greetings and small talk → simple
  ['hi', 'simple'],
  ['Hello there!', 'simple'],
  ['hey', 'simple'],
  ['Good morning', 'simple'],
  ['thanks!', 'simple'],
  ['Thank you so much', 'simple'],
  ['bye', 'simple'],
  ['how are you?', 'simple'],
  // one-fact questions → simple
  ['What time is it?', 'simple'],
  ['What is the capital of France?', 'simple'],
  ['Who wrote Hamlet?', 'simple'],
  ['Is it going to rain today?', 'simple'],
  ['How many days are in a leap year?', 'simple'],
  // a named lookup or a single action → medium
  ['Show me the dentist task', 'medium'],
  ['find my grocery task', 'medium'],
  ['What are my tasks?', 'medium'],
  ['Which of my tasks are high priority?', 'medium'],
  ['Add a task to buy milk', 'medium'],
  ['Mark the milk task as done', 'medium'],
  ['Delete the grocery task', 'medium'],
  ['Rename the dentist task to "Dentist at 3pm"', 'medium'],
  ['list tasks', 'medium'],
  ['Look up order 4411', 'medium'],
  ['Do I have anything due in my list?', 'medium'],
  // several actions or a plan → complex
  ['Find the milk task and then delete it', 'complex'],
  ['Add a task for the dentist, then mark the milk task as done', 'complex'],
  ['Complete every task about groceries', 'complex'],
  ['Delete all my completed tasks', 'complex'],
  ['Plan my week', 'complex'],
  ['Help me organise my tasks by priority', 'complex'],
  ['Create a task for the report; assign it to Ann', 'complex'],
  ['First list my tasks, next summarise them, finally email the summary', 'complex'],
  ['Rename the dentist task and change its priority to high', 'complex'],
  // nothing known → complex
  [undefined, 'complex'],
  ['', 'complex'],
  ['   ', 'complex'],
  ['I would like some help with a few things regarding the project we discussed last time and the budget', 'complex'],
];

describe('classifyComplexity', () => {
  it('has a table of at least 30 messages', () => {
    expect(TABLE.length).toBeGreaterThanOrEqual(30);
  });

  it.each(TABLE)('%j → %s', (message, tier) => {
    expect(classifyComplexity(message)).toBe(tier);
  });

  it('never throws on what is not a string', () => {
    expect(classifyComplexity(42 as never)).toBe('complex');
    expect(classifyComplexity(null as never)).toBe('complex');
    expect(classifyComplexity('x'.repeat(1_000_000))).toBe('complex');
  });
});

describe('registry.forIntent', () => {
  const registry = createToolRegistry([...taskTools], {
    tiers: { medium: ['list_tasks', 'add_task', 'complete_task'] },
  });
  const names = (tools: readonly { name: string }[]) => tools.map((t) => t.name);

  it('returns the tier of a complexity: simple 0 tools, medium its list, complex all 5', () => {
    expect(registry.forIntent({ complexity: 'simple' })).toHaveLength(0);
    expect(names(registry.forIntent({ complexity: 'medium' }))).toEqual(['list_tasks', 'add_task', 'complete_task']);
    expect(registry.forIntent({ complexity: 'complex' })).toHaveLength(5);
  });

  it('classifies a message with classifyComplexity', () => {
    expect(registry.forIntent('hello!')).toHaveLength(0);
    expect(names(registry.forIntent('Add a task to buy milk'))).toEqual(['list_tasks', 'add_task', 'complete_task']);
    expect(registry.forIntent('Find the milk task and then delete it')).toHaveLength(5);
    expect(registry.forIntent(undefined)).toHaveLength(5);
  });

  it('takes a classifier of your own, and checks what it returns', () => {
    const custom = createToolRegistry([...taskTools], {
      tiers: { medium: ['list_tasks'] },
      classify: (m) => (m?.includes('!') ? 'medium' : 'simple'),
    });
    expect(names(custom.forIntent('go!'))).toEqual(['list_tasks']);
    expect(custom.forIntent('go')).toHaveLength(0);
    const broken = createToolRegistry([...taskTools], { classify: () => 'huge' as never });
    expect(() => broken.forIntent('x')).toThrow(DefinitionError);
    expect(() => registry.forIntent({ complexity: 'huge' as never })).toThrow(DefinitionError);
  });
});

describe("the tier's tool count in result metadata and the trace", () => {
  const registry = createToolRegistry([...taskTools], {
    tiers: { medium: ['list_tasks', 'add_task', 'complete_task'] },
  });
  const store = createTaskStore({ users: fixtures.users });
  const runner = createRunner({ invoker: store.invoker, registry });
  const alice = { context: { userId: fixtures.alice } };

  it('simple 0: a tool in no tier from simple up fails, and says the simple tier offers 0 tools', async () => {
    const r = await runner.invoke('archive_task', {}, { ...alice, tier: 'simple' });
    expect(r.status === 'failed' && r.error.code).toBe('not_in_tier');
    expect(r.metadata.context).toMatchObject({ tier: 'simple', toolCount: 0 });
    expect(r.trace).toMatchObject({ tier: 'simple', toolCount: 0 });
  });

  it('medium its list: a tool escalated from simple to medium counts the 3 medium tools', async () => {
    const r = await runner.invoke('list_tasks', { user_id: fixtures.alice }, { ...alice, tier: 'simple' });
    expect(r.status).toBe('completed');
    expect(r.metadata.context).toEqual({
      tool: 'list_tasks',
      tier: 'medium',
      toolCount: 3,
      wasEscalated: true,
      originalTier: 'simple',
    });
    expect(r.trace).toMatchObject({ tier: 'medium', toolCount: 3 });
  });

  it('complex all: a tool found only in complex counts all 5', async () => {
    const task = store.tasks(fixtures.alice)[0]!;
    const r = await runner.invoke(
      'update_task',
      { user_id: fixtures.alice, task_id: task.task_id, title: 'x' },
      { ...alice, tier: 'medium' },
    );
    expect(r.metadata.context).toMatchObject({ tier: 'complex', toolCount: 5 });
    expect(r.trace).toMatchObject({ tier: 'complex', toolCount: 5 });
  });

  it('without a tier, neither the metadata nor the trace has one', async () => {
    const r = await runner.invoke('list_tasks', { user_id: fixtures.alice }, alice);
    expect(r.metadata.context).toEqual({ tool: 'list_tasks' });
    expect(r.trace).not.toHaveProperty('tier');
    expect(r.trace).not.toHaveProperty('toolCount');
  });
});
