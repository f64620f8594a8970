// A run's steps as the waterfall shows them: the recorded trace, else its events, nested sub-chain steps indented.
import type { Json, Step, RunView, RunEvent } from './types.js';

/** Steps from the recorded trace, else (a run in flight) from its events. */
export function stepsOf(state: { view: RunView; events: RunEvent[] }): Step[] {
  const byId = new Map<string, Step>();
  for (const st of state.view.steps) byId.set(st.id, { ...st });
  let n = state.view.steps.length;
  for (const e of state.events) {
    if (!e.step || (byId.has(e.step) && e.type === 'step:start')) continue;
    let st = byId.get(e.step);
    if (!st) {
      st = {
        stepNumber: (e.data.stepNumber as number | undefined) ?? ++n,
        id: e.step,
        status: 'running',
        attempts: 0,
        latencyMs: 0,
        startedAt: new Date(e.at).toISOString(),
      };
      if (typeof e.data.tool === 'string') st.tool = e.data.tool;
      byId.set(e.step, st);
    }
    if (e.type === 'step:end' && st.status === 'running') {
      st.status = String(e.data.status);
      st.attempts = Number(e.data.attempts);
      st.latencyMs = Number(e.data.latencyMs);
      if (e.data.error) st.error = e.data.error as Json;
    }
  }
  const out: Step[] = [];
  // A step that ran chains is followed by their steps (items, iterations), indented under it.
  const add = (st: Step, depth: number): void => {
    out.push({ ...st, depth });
    for (const c of st.children ?? []) add(c, depth + 1);
  };
  const nested = new Set<string>();
  const collect = (st: Step): void => {
    for (const c of st.children ?? []) (nested.add(c.id), collect(c));
  };
  for (const st of byId.values()) collect(st);
  for (const st of [...byId.values()].sort((a, b) => a.stepNumber - b.stepNumber)) {
    if (nested.has(st.id)) continue; // shown under its parent
    add(st, st.children ? 0 : st.id.split('/').length > 1 ? Math.ceil((st.id.split('/').length - 1) / 2) : 0);
  }
  return out;
}
