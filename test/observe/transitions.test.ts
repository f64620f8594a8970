import { describe, expect, it } from 'vitest';
import { TransitionTracker } from '../../src/observe/transitions.js';

describe('TransitionTracker', () => {
  it('reports the transition from the session’s previous call and keeps its last 10 tools, oldest first', () => {
    const t = new TransitionTracker();
    expect(t.record('s', 'tool0', 0, 5, true)).toBeUndefined();
    expect(t.record('s', 'tool1', 8, 10, false)).toEqual({
      fromTool: 'tool0',
      toTool: 'tool1',
      sessionId: 's',
      success: false,
      timestamp: 10,
      gapMs: 3,
    });
    for (let i = 2; i < 12; i++) t.record('s', `tool${i}`, 10 * i, 10 * i + 1, true);
    expect(t.recent('s')).toEqual(Array.from({ length: 10 }, (_, i) => `tool${i + 2}`));
    expect(t.recent('other')).toEqual([]);
    t.forget('s');
    expect(t.recent('s')).toEqual([]);
  });

  it('forgets the least recently used session when full', () => {
    const t = new TransitionTracker(2);
    t.record('a', 'x', 0, 1, true);
    t.record('b', 'x', 0, 1, true);
    t.record('a', 'y', 2, 3, true); // a is now the most recent
    t.record('c', 'x', 0, 1, true);
    expect([t.recent('a'), t.recent('b'), t.recent('c')]).toEqual([['x', 'y'], [], ['x']]);
  });

  it('parks a run’s last call across a gate, taken once on resume', () => {
    const t = new TransitionTracker();
    t.park('run1', { tool: 'list_tasks', endedAt: 7 });
    expect(t.take('run1')).toMatchObject({ tool: 'list_tasks', endedAt: 7 });
    expect(t.take('run1')).toBeUndefined();
  });
});
