import { describe, expect, it } from 'vitest';
import { createRunner, MetricsCollector, taskTools, type ToolTransition } from 'chainkit';
import { createTaskStore, fixtures } from 'chainkit/testing';

const t = (sessionId: string, fromTool: string, toTool: string, success = true, timestamp = 0): ToolTransition => ({
  fromTool,
  toTool,
  sessionId,
  success,
  timestamp,
  gapMs: 10,
});

describe('MetricsCollector', () => {
  it('detects a common chain after 5 sessions of linear, divergent and decision-style sequences', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const runner = createRunner({ invoker: store.invoker, tools: [...taskTools] });
    const alice = fixtures.alice;
    const call = (session: string, tool: string, input: Record<string, unknown>) =>
      runner.invoke(tool, { user_id: alice, ...input }, { sessionId: session, context: { userId: alice } });
    for (let s = 0; s < 5; s++) {
      const session = `s${s}`;
      const first = await call(session, 'list_tasks', { status: 'all' }); // linear: list → complete → list
      const id =
        first.status === 'completed' ? (first.output as { tasks: { task_id: string }[] }).tasks[0]!.task_id : '';
      await call(session, 'complete_task', { task_id: id });
      await call(session, 'list_tasks', { status: 'pending' });
      if (s % 2 === 0)
        await call(session, 'add_task', { title: `new ${s}` }); // divergent tails
      else await call(session, 'update_task', { task_id: id, title: `renamed ${s}` }); // decision: add or update
    }
    const summary = runner.metrics.chainSummary();
    expect(summary.commonChains[0]).toMatchObject({
      tools: ['list_tasks', 'complete_task', 'list_tasks'],
      occurrences: 5,
      avgSuccessRate: 1,
    });
    expect(summary.commonChains.every((c) => c.occurrences >= 5 && c.tools.length >= 3 && c.tools.length <= 5)).toBe(
      true,
    );
    expect(summary.commonChains.some((c) => c.tools.includes('add_task'))).toBe(false); // 3 sessions only
    expect(summary.entryTools).toEqual({ list_tasks: 5 });
    expect(summary.terminalTools).toEqual({ add_task: 3, update_task: 2 });
    expect(summary.transitions.list_tasks!.complete_task).toMatchObject({ count: 5, successRate: 1 });
    expect(runner.metrics.transitionsFrom('complete_task')).toMatchObject({ list_tasks: { count: 5 } });
    expect(runner.metrics.callStats('list_tasks').direct).toMatchObject({
      invocations: 10,
      successes: 10,
      failures: 0,
    });
  });

  it('is a bounded ring: old transitions leave the matrix too', () => {
    const m = new MetricsCollector({ capacity: 3 });
    m.recordTransition(t('a', 'x', 'y'));
    for (let i = 0; i < 3; i++) m.recordTransition(t('b', 'p', 'q'));
    expect(m.transitions()).toHaveLength(3);
    expect(m.transitionsFrom('x')).toEqual({});
    expect(m.transitionsFrom('p')).toMatchObject({ q: { count: 3 } });
  });

  it('summarises a full ring of 10,000 transitions exactly', () => {
    // 500 sessions, each walking a → b → c → d → a … for 20 moves (ring order keeps each session's order).
    const m = new MetricsCollector();
    const tools = ['a', 'b', 'c', 'd'];
    for (let i = 0; i < 10_000; i++) {
      const k = Math.floor(i / 500);
      m.recordTransition({
        fromTool: tools[k % 4]!,
        toTool: tools[(k + 1) % 4]!,
        sessionId: `s${i % 500}`,
        success: true,
        timestamp: k * 10,
        gapMs: 5,
      });
    }
    const summary = m.chainSummary();
    expect(m.transitions()).toHaveLength(10_000);
    expect(summary.entryTools).toEqual({ a: 500 });
    expect(summary.terminalTools).toEqual({ a: 500 }); // the 20th move ends on a
    expect(summary.transitions.a!.b).toEqual({ count: 2500, successRate: 1, avgGapMs: 5 });
    // Ties on occurrences rank longer sequences first: a→b→c→d→a starts at moves 0, 4, 8, 12, 16.
    expect(summary.commonChains[0]).toEqual({
      tools: ['a', 'b', 'c', 'd', 'a'],
      occurrences: 2500,
      avgSuccessRate: 1,
      avgTotalDurationMs: 35,
    });
  });
});

describe('common chains and own keys', () => {
  // 5 sessions of a → b → c whose second move succeeds in `ok` of them.
  const sessions = (m: MetricsCollector, ok: number, names = ['a', 'b', 'c']) => {
    for (let s = 0; s < 5; s++) {
      m.recordTransition(t(`s${s}`, names[0]!, names[1]!, true));
      m.recordTransition(t(`s${s}`, names[1]!, names[2]!, s < ok));
    }
  };

  it('lists a sequence only with an average success rate of at least 70 %', () => {
    const low = new MetricsCollector();
    sessions(low, 1); // one session at 1, four at 0.5: 0.6
    expect(low.chainSummary().commonChains).toEqual([]);
    const edge = new MetricsCollector();
    sessions(edge, 2); // 0.7 exactly
    expect(edge.chainSummary().commonChains).toEqual([
      expect.objectContaining({ tools: ['a', 'b', 'c'], occurrences: 5, avgSuccessRate: 0.7 }),
    ]);
  });

  it('counts tools named like Object.prototype members as any other tool', () => {
    const m = new MetricsCollector();
    sessions(m, 5, ['constructor', 'toString', 'valueOf']);
    const summary = m.chainSummary();
    expect(summary.entryTools).toEqual({ constructor: 5 });
    expect(summary.terminalTools).toEqual({ valueOf: 5 });
    expect(Object.keys(summary.transitions).sort()).toEqual(['constructor', 'toString']);
    expect(summary.transitions.constructor!.toString).toEqual({ count: 5, successRate: 1, avgGapMs: 10 });
    expect(summary.commonChains[0]!.tools).toEqual(['constructor', 'toString', 'valueOf']);
    expect(Object.hasOwn(Object, 'toString')).toBe(false); // nothing written onto built-ins
  });
});
