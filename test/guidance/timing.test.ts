import { describe, expect, it } from 'vitest';
import { createRunner, listTasks, TimingModel } from 'chainkit';
import { complexityOf } from '../../src/guidance/timing.js';

describe('TimingModel', () => {
  const tools = new Map([[listTasks.name, listTasks]]);

  it('falls back to the declared duration, then learns; confidence changes at 10 and 100 samples', () => {
    const m = new TimingModel(tools);
    expect(m.estimate('list_tasks')).toMatchObject({
      estimatedDurationMs: 150,
      confidence: 'low',
      samples: 0,
      timeoutMs: 3000,
      willTimeout: false,
    });
    const durations = [80, 95, 100, 105, 110, 120, 90, 100, 130, 100];
    for (const d of durations.slice(0, 9)) m.record('list_tasks', d);
    expect(m.estimate('list_tasks').confidence).toBe('low');
    m.record('list_tasks', durations[9]!);
    const e = m.estimate('list_tasks');
    expect(e.confidence).toBe('medium');
    const median = 100;
    expect(Math.abs(e.estimatedDurationMs - median) / median).toBeLessThanOrEqual(0.2);
    for (let i = 0; i < 90; i++) m.record('list_tasks', 100);
    expect(m.estimate('list_tasks').confidence).toBe('medium'); // exactly 100
    m.record('list_tasks', 100);
    expect(m.estimate('list_tasks').confidence).toBe('high');
  });

  it('scales with complexity, reports p90 and willTimeout, and moves samples as JSON', () => {
    const m = new TimingModel(tools);
    for (let i = 1; i <= 20; i++) m.record('list_tasks', i * 100, 10);
    expect(m.estimate('list_tasks', undefined, { percentile: 'p90' }).estimatedDurationMs).toBe(1810);
    expect(m.estimate('list_tasks', 20).estimatedDurationMs).toBe(2100); // twice the typical complexity
    expect(m.estimate('list_tasks', 40)).toMatchObject({ estimatedDurationMs: 4200, willTimeout: true });
    const fresh = new TimingModel(tools);
    fresh.import(JSON.parse(JSON.stringify(m.export())));
    expect(fresh.estimate('list_tasks')).toEqual(m.estimate('list_tasks'));
    expect(() => fresh.import({ version: 2 } as never)).toThrow(/timing.export/);
    expect(complexityOf({ ids: [1, 2, 3], q: 'x' })).toBe(4);
  });

  it('is what runner.timing learns from real calls', async () => {
    const runner = createRunner({ invoker: async () => ({ tasks: [] }), tools: [listTasks] });
    for (let i = 0; i < 10; i++)
      await runner.invoke('list_tasks', { user_id: '6f1d2c3b-4a5e-4f60-8a7b-1c2d3e4f5a6b', status: 'all' });
    expect(runner.timing.estimate('list_tasks')).toMatchObject({ confidence: 'medium', samples: 10 });
  });
});
