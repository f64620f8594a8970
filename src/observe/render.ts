// Human views of runs and chains: a terminal waterfall of a trace, a Mermaid flowchart of a chain.
import type { Chain } from '../define/chain.js';
import type { PlannedStep } from '../define/step-kinds.js';
import type { Trace, TraceStep } from './trace.js';

const MARK: Record<TraceStep['status'], string> = {
  success: '✓',
  error: '✗',
  skipped: '-',
  cached: '↺',
  awaiting_confirmation: '?',
  declined: '⊘',
  compensated: '↶',
  waiting: '…',
};

/** Options of {@link formatTrace}. */
export interface FormatTraceOptions {
  /** Width of the bar area in characters. Default 40. */
  width?: number;
  /**
   * Nested entries (sub-chain steps, `forEach` items, `loop` iterations) shown per step before `… n more`. Default 20.
   */
  maxChildren?: number;
}

/** Trace entries with their nesting depth, children under their step; `more` counts children left out. */
type Row = [step: TraceStep, depth: number, more?: number];
function flatten(steps: readonly TraceStep[], depth: number, max: number, rows: Row[]): Row[] {
  const shown = depth === 0 ? steps.length : Math.min(steps.length, max);
  for (let i = 0; i < shown; i++) {
    const s = steps[i]!;
    rows.push([s, depth]);
    if (s.children && s.children.length > 0 && depth < 8) flatten(s.children, depth + 1, max, rows);
  }
  if (shown < steps.length) rows.push([steps[0]!, depth, steps.length - shown]);
  return rows;
}

/**
 * Renders a trace as a terminal waterfall: one line per step with its offset, duration and status.
 *
 * @example
 * ```ts
 * console.log(formatTrace(result.trace));
 * // find_and_delete  completed  412 ms  run V1StGXR8
 * //  1 find    list_tasks   ██████               ✓ 150 ms
 * //  …
 * ```
 */
export function formatTrace(trace: Trace, options: FormatTraceOptions = {}): string {
  const width = Math.max(10, options.width ?? 40);
  const t0 = Date.parse(trace.startedAt);
  const total = Math.max(1, trace.totalLatencyMs);
  const rows = flatten(trace.steps, 0, options.maxChildren ?? 20, []);
  const idW = Math.max(4, ...rows.map(([s, depth]) => s.id.length + 2 * depth));
  const toolW = Math.max(4, ...rows.map(([s]) => (s.tool ?? '').length));
  const lines = [`${trace.chain || '(invoke)'}  ${trace.status}  ${trace.totalLatencyMs} ms  run ${trace.runId}`];
  for (const [s, depth, more] of rows) {
    if (more !== undefined) {
      lines.push(`   ${'  '.repeat(depth)}… ${more} more`);
      continue;
    }
    const offset = Math.max(0, Date.parse(s.startedAt) - t0);
    const from = Math.min(width - 1, Math.floor((offset / total) * width));
    const len = Math.max(1, Math.min(width - from, Math.round((s.latencyMs / total) * width)));
    const bar = `${' '.repeat(from)}${'█'.repeat(len)}`.padEnd(width);
    const attempts = s.attempts > 1 ? ` ×${s.attempts}` : '';
    const err = s.error ? `  ${s.error.category}/${s.error.code}` : '';
    const id = `${'  '.repeat(depth)}${s.id}`.padEnd(idW);
    const tool = (s.tool ?? '').padEnd(toolW);
    lines.push(
      `${String(s.stepNumber).padStart(2)} ${id} ${tool} ${bar} ${MARK[s.status]} ${s.latencyMs} ms${attempts}${err}`,
    );
  }
  return lines.join('\n');
}

/**
 * Renders a chain as a Mermaid flowchart: one node per step, edges from dependencies, gated
 * steps marked.
 *
 * @example
 * ```ts
 * console.log(toMermaid(findAndDelete)); // paste into any Mermaid renderer
 * ```
 */
export function toMermaid(chain: Chain): string {
  // Node ids are the step ids, but for `end` (a Mermaid keyword) and the chain's own start node,
  // which take the first free name with underscores added.
  const taken = new Set(chain.plan.map((p) => p.id));
  const free = (base: string): string => {
    let id = base;
    while (taken.has(id)) id += '_';
    taken.add(id);
    return id;
  };
  const start = free('start');
  const endId = free('end_');
  const node = (id: string): string => (id === 'end' ? endId : id);
  const lines = ['flowchart TD', `  ${start}(["${mermaidText(chain.name)}"])`];
  const subgraphs: string[] = [];
  for (const p of chain.plan) {
    const id = node(p.id);
    const label = p.tool
      ? `${p.id}<br/>${p.tool.name}`
      : p.calls
        ? `${p.id}<br/>${p.kind}: ${p.calls.map((c) => c.chain.name).join(' | ')}`
        : `${p.id}<br/>${p.kind}`;
    // A step that runs chains: each sub-chain's steps in a subgraph the step points at, at every depth.
    subChains(p, `${p.id}__`, id, subgraphs, '  ');
    const gated = p.step.confirm ? ' ⚠ confirm' : '';
    lines.push(p.kind === 'tool' ? `  ${id}["${mermaidText(label)}${gated}"]` : `  ${id}{{"${mermaidText(label)}"}}`);
    if (p.deps.length === 0) lines.push(`  ${start} --> ${id}`);
    // Only direct edges: a dependency already implied through another dependency is left out.
    const implied = new Set(p.deps.flatMap((d) => chain.plan[d]!.deps));
    for (const d of p.deps) if (!implied.has(d)) lines.push(`  ${node(chain.plan[d]!.id)} --> ${id}`);
  }
  return [...lines, ...subgraphs].join('\n');
}

const mermaidText = (s: string): string => s.replace(/"/g, "'");

/** The subgraphs of the chains step `p` runs (named `prefix` + their index), pointed at from node `from`. */
function subChains(p: PlannedStep, prefix: string, from: string, out: string[], indent: string): void {
  p.calls?.forEach((c, n) => {
    const sub = `${prefix}${n}`;
    const plan = (c.chain as Chain).plan;
    out.push(`${indent}subgraph ${sub}["${mermaidText(c.chain.name)}"]`);
    for (const q of plan) {
      out.push(
        `${indent}  ${sub}_${q.id}["${mermaidText(q.tool ? `${q.id}<br/>${q.tool.name}` : `${q.id}<br/>${q.kind}`)}"]`,
      );
      for (const d of q.deps) out.push(`${indent}  ${sub}_${plan[d]!.id} --> ${sub}_${q.id}`);
      subChains(q, `${sub}_${q.id}__`, `${sub}_${q.id}`, out, `${indent}  `);
    }
    out.push(`${indent}end`, `${indent}${from} -.-> ${sub}`);
  });
}
