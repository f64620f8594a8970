// Learns which tool follows which: a ring of recent transitions, summarised lazily on query.
import type { ToolTransition } from '../observe/trace.js';
import { checkOptions, integer } from '../define/options.js';
import { z } from 'zod';

/** Statistics of moves from one tool to another. */
export interface TransitionStats {
  count: number;
  /** Share of these moves whose second call succeeded, 0–1. */
  successRate: number;
  avgGapMs: number;
}

/** A sequence of 3–5 tools seen together often enough (≥ 5 times, ≥ 70 % successful) to be worth a chain. */
export interface CommonChain {
  tools: string[];
  occurrences: number;
  avgSuccessRate: number;
  /** From the end of the first tool to the end of the last, on average. */
  avgTotalDurationMs: number;
}

/** What {@link MetricsCollector.chainSummary} returns. */
export interface ChainSummary {
  commonChains: CommonChain[];
  transitions: Record<string, Record<string, TransitionStats>>;
  /** Tools that start sessions, with how often. */
  entryTools: Record<string, number>;
  /** Tools that end sessions (so far), with how often. */
  terminalTools: Record<string, number>;
}

/** Counters of calls per tool, split by how they were made. */
export interface CallStats {
  invocations: number;
  successes: number;
  failures: number;
  latencyMs: { min: number; avg: number; max: number };
}

/** How often failures earned fallback advice: in all, by tool and by error category. */
export interface AdviceStats {
  total: number;
  byTool: Record<string, number>;
  byCategory: Record<string, number>;
}

/** A common chain's average success rate must reach this to be listed (the reference behaviour). */
const MIN_CHAIN_SUCCESS = 0.7;
// Success rates are sums of fractions: 0.7 may come out as 0.6999999999999998.
const EPSILON = 1e-9;

// Keyed by tool names from outside (a learning store may hold any string): no inherited keys.
const ownRecord = <T>(): Record<string, T> => Object.create(null) as Record<string, T>;

/** Options of {@link MetricsCollector}. */
export interface MetricsOptions {
  /** Transitions kept (a ring: the oldest are overwritten). Default 10 000. */
  capacity?: number;
  /** Occurrences before a sequence counts as a common chain. Default 5. */
  minOccurrences?: number;
  /** Average success rate (0–1) a sequence needs to count as a common chain. Default 0.7. */
  minSuccessRate?: number;
}

const METRICS_OPTIONS = z.object(
  {
    capacity: integer('capacity', 1).optional(),
    minOccurrences: integer('minOccurrences', 0).optional(),
    minSuccessRate: z
      .custom<number>(
        (v) => typeof v === 'number' && v >= 0 && v <= 1,
        'Expected `minSuccessRate` to be a number from 0 to 1.',
      )
      .optional(),
  },
  { error: 'Expected MetricsCollector options to be an object.' },
);

/**
 * Records tool transitions and call counters; every summary is computed on query, so recording
 * stays O(1) on the hot path.
 *
 * @example
 * ```ts
 * runner.metrics.transitionsFrom('list_tasks'); // { update_task: { count: 12, successRate: 0.92, avgGapMs: 840 } }
 * runner.metrics.chainSummary().commonChains;
 * // [{ tools: ['list_tasks', 'update_task', 'list_tasks'], occurrences: 7, … }]
 * ```
 */
export class MetricsCollector {
  private readonly ring: (ToolTransition | undefined)[];
  private next = 0;
  private size = 0;
  private readonly calls = new Map<string, { chain?: CallStats; direct?: CallStats }>();
  /** from → to → running sums of the transitions in the ring, kept in step with it. */
  private readonly cells = new Map<string, Map<string, { count: number; ok: number; gap: number }>>();
  private readonly minOccurrences: number;
  private readonly minSuccessRate: number;
  // Keyed by known tools and the fixed categories: bounded by what the runner knows.
  private readonly advice = { total: 0, byTool: new Map<string, number>(), byCategory: new Map<string, number>() };

  constructor(options: MetricsOptions = {}) {
    checkOptions('MetricsCollector options', METRICS_OPTIONS, options);
    const capacity = options.capacity ?? 10_000;
    this.ring = new Array(capacity);
    this.minOccurrences = options.minOccurrences ?? 5;
    this.minSuccessRate = options.minSuccessRate ?? MIN_CHAIN_SUCCESS;
  }

  /** Adds a transition (O(1)). */
  recordTransition(t: ToolTransition): void {
    const evicted = this.ring[this.next];
    if (evicted) this.count(evicted, -1);
    this.count(t, 1);
    this.ring[this.next] = t;
    this.next = (this.next + 1) % this.ring.length;
    if (this.size < this.ring.length) this.size++;
  }

  private count(t: ToolTransition, sign: 1 | -1): void {
    let row = this.cells.get(t.fromTool);
    if (!row) this.cells.set(t.fromTool, (row = new Map()));
    let cell = row.get(t.toTool);
    if (!cell) row.set(t.toTool, (cell = { count: 0, ok: 0, gap: 0 }));
    cell.count += sign;
    if (t.success) cell.ok += sign;
    cell.gap += sign * t.gapMs;
    if (cell.count === 0) row.delete(t.toTool);
  }

  /** Counts one call of `tool` made as a chain step or a direct `invoke` (O(1)). */
  recordCall(tool: string, mode: 'chain' | 'direct', success: boolean, latencyMs: number): void {
    let byMode = this.calls.get(tool);
    if (!byMode) this.calls.set(tool, (byMode = {}));
    const s = (byMode[mode] ??= {
      invocations: 0,
      successes: 0,
      failures: 0,
      latencyMs: { min: Infinity, avg: 0, max: 0 },
    });
    s.invocations++;
    if (success) s.successes++;
    else s.failures++;
    s.latencyMs.min = Math.min(s.latencyMs.min, latencyMs);
    s.latencyMs.max = Math.max(s.latencyMs.max, latencyMs);
    s.latencyMs.avg += (latencyMs - s.latencyMs.avg) / s.invocations;
  }

  /** Counts one fallback-advice event: a failure of `tool` with `category` that earned advice (O(1)). */
  recordAdvice(tool: string, category: string): void {
    this.advice.total++;
    this.advice.byTool.set(tool, (this.advice.byTool.get(tool) ?? 0) + 1);
    this.advice.byCategory.set(category, (this.advice.byCategory.get(category) ?? 0) + 1);
  }

  /**
   * How often failures earned fallback advice, in all, by tool and by category.
   *
   * @example
   * ```ts
   * runner.metrics.adviceStats(); // { total: 3, byTool: { search: 3 }, byCategory: { timeout: 2, network: 1 } }
   * ```
   */
  adviceStats(): AdviceStats {
    const byTool = ownRecord<number>();
    const byCategory = ownRecord<number>();
    for (const [k, n] of this.advice.byTool) byTool[k] = n;
    for (const [k, n] of this.advice.byCategory) byCategory[k] = n;
    return { total: this.advice.total, byTool, byCategory };
  }

  /** Call counters of a tool by mode. */
  callStats(tool: string): { chain?: CallStats; direct?: CallStats } {
    return structuredClone(this.calls.get(tool) ?? {});
  }

  /** The transitions kept, oldest first. */
  transitions(): ToolTransition[] {
    const out: ToolTransition[] = [];
    const start = this.size < this.ring.length ? 0 : this.next;
    for (let i = 0; i < this.size; i++) out.push(this.ring[(start + i) % this.ring.length]!);
    return out;
  }

  /** Where sessions went after `tool`, by next tool. */
  transitionsFrom(tool: string): Record<string, TransitionStats> {
    const out = ownRecord<TransitionStats>();
    for (const [to, c] of this.cells.get(tool) ?? [])
      out[to] = { count: c.count, successRate: c.ok / c.count, avgGapMs: c.gap / c.count };
    return out;
  }

  /**
   * @internal The tools sessions went to after `tool` at least `minCount` times with a success rate
   * above `minSuccess`, most seen first (for next-tool suggestions: no record built per result).
   */
  frequentFollowers(tool: string, minCount: number, minSuccess: number): [string, TransitionStats][] | undefined {
    const row = this.cells.get(tool);
    if (row === undefined) return undefined;
    let out: [string, TransitionStats][] | undefined;
    for (const [to, c] of row) {
      if (c.count < minCount || c.ok / c.count <= minSuccess) continue;
      (out ??= []).push([to, { count: c.count, successRate: c.ok / c.count, avgGapMs: c.gap / c.count }]);
    }
    return out?.sort((a, b) => b[1].count - a[1].count);
  }

  /** The learned picture: common chains, the transition matrix, entry and terminal tools. */
  chainSummary(): ChainSummary {
    const all = this.transitions();
    const sessions = new Map<string, ToolTransition[]>();
    for (const t of all) {
      const list = sessions.get(t.sessionId);
      if (list) list.push(t);
      else sessions.set(t.sessionId, [t]);
    }
    const entryTools = ownRecord<number>();
    const terminalTools = ownRecord<number>();
    const windows = new Map<string, { tools: string[]; n: number; success: number; duration: number }>();
    for (const list of sessions.values()) {
      entryTools[list[0]!.fromTool] = (entryTools[list[0]!.fromTool] ?? 0) + 1;
      const last = list[list.length - 1]!.toTool;
      terminalTools[last] = (terminalTools[last] ?? 0) + 1;
      // A session's tools: the first `from`, then every `to`; windows of k tools span k-1 transitions.
      for (let k = 3; k <= 5; k++) {
        for (let i = 0; i + k - 1 <= list.length; i++) {
          const span = list.slice(i, i + k - 1);
          const tools = [span[0]!.fromTool, ...span.map((t) => t.toTool)];
          const key = tools.join('\u0000');
          let w = windows.get(key);
          if (!w) windows.set(key, (w = { tools, n: 0, success: 0, duration: 0 }));
          w.n++;
          w.success += span.filter((t) => t.success).length / span.length;
          w.duration += span[span.length - 1]!.timestamp - span[0]!.timestamp + span[0]!.gapMs;
        }
      }
    }
    const commonChains = [...windows.values()]
      .filter((w) => w.n >= this.minOccurrences && w.success / w.n >= this.minSuccessRate - EPSILON)
      .map((w) => ({
        tools: w.tools,
        occurrences: w.n,
        avgSuccessRate: w.success / w.n,
        avgTotalDurationMs: w.duration / w.n,
      }))
      .sort((a, b) => b.occurrences - a.occurrences || b.tools.length - a.tools.length);
    return { commonChains, transitions: this.matrix(all), entryTools, terminalTools };
  }

  private matrix(list: readonly ToolTransition[]): Record<string, Record<string, TransitionStats>> {
    const acc = ownRecord<Record<string, { count: number; ok: number; gap: number }>>();
    for (const t of list) {
      const row = (acc[t.fromTool] ??= ownRecord());
      const cell = (row[t.toTool] ??= { count: 0, ok: 0, gap: 0 });
      cell.count++;
      if (t.success) cell.ok++;
      cell.gap += t.gapMs;
    }
    const out = ownRecord<Record<string, TransitionStats>>();
    for (const [from, row] of Object.entries(acc)) {
      const stats = (out[from] = ownRecord<TransitionStats>());
      for (const [to, c] of Object.entries(row))
        stats[to] = { count: c.count, successRate: c.ok / c.count, avgGapMs: c.gap / c.count };
    }
    return out;
  }
}
