// Learns how long each tool takes: recent samples per tool, estimates by median (or p90), with complexity.
import type { Tool } from '../define/tool.js';

/** How sure an estimate is: more than 100 samples is high, 10–100 medium, fewer low. */
export type Confidence = 'high' | 'medium' | 'low';

/**
 * Where an estimate came from: the tool's recorded calls (`learned`), its `expectedDurationMs`
 * (`declared`), or neither (`default`: {@link DEFAULT_ESTIMATE_MS}).
 */
export type EstimateSource = 'learned' | 'declared' | 'default';

/**
 * The estimate of a tool nothing is known about: 15 s, so a model never takes an unknown tool for
 * an instant one. Its confidence is `low` and its source `default`.
 *
 * @example
 * ```ts
 * runner.timing.estimate('brand_new_tool').estimatedDurationMs === DEFAULT_ESTIMATE_MS; // true
 * ```
 */
export const DEFAULT_ESTIMATE_MS = 15_000;

/** What {@link TimingModel.estimate} returns. */
export interface TimingEstimate {
  estimatedDurationMs: number;
  confidence: Confidence;
  /** Where the estimate came from. */
  source: EstimateSource;
  /** True when the estimate exceeds the tool's timeout (never for a `default` estimate: it predicts nothing). */
  willTimeout: boolean;
  timeoutMs: number;
  samples: number;
}

/** Samples as plain JSON, to seed another deployment. */
export interface TimingData {
  version: 1;
  tools: Record<string, { durationMs: number; complexity: number }[]>;
}

const MAX_SAMPLES = 1000;

/**
 * A measure of how much work an input asks for: 1 plus the lengths of its top-level arrays and
 * strings over 1 KB. Cheap on purpose: it runs on every call.
 *
 * @example
 * ```ts
 * complexityOf({ ids: ['a', 'b', 'c'] }); // 4
 * ```
 */
export function complexityOf(input: unknown): number {
  if (typeof input !== 'object' || input === null) return 1;
  let c = 1;
  try {
    for (const key in input) {
      const v = (input as Record<string, unknown>)[key];
      if (Array.isArray(v)) c += v.length;
      else if (typeof v === 'string' && v.length > 1024) c += Math.floor(v.length / 1024);
    }
  } catch {
    // a getter that throws or a hostile Proxy (a schema that passes objects through): what was counted
  }
  return c;
}

/**
 * The size of an input in characters: a string's length, else the length of its JSON text (0 when
 * it has none, e.g. a cycle). For failures only: it walks the whole input.
 *
 * @example
 * ```ts
 * inputSizeOf({ text: 'abc' }); // 14
 * ```
 */
export function inputSizeOf(input: unknown): number {
  if (typeof input === 'string') return input.length;
  try {
    return JSON.stringify(input)?.length ?? 0;
  } catch {
    return 0; // a cycle, a BigInt or a throwing getter: no size rather than a broken failure report
  }
}

const confidenceOf = (n: number): Confidence => (n > 100 ? 'high' : n >= 10 ? 'medium' : 'low');

function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return 0;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

/**
 * One tool's last {@link MAX_SAMPLES} samples, oldest overwritten: two typed arrays grown by doubling, so
 * recording a call allocates nothing (an object per sample, kept for a thousand calls, cost the collector).
 */
class Samples {
  durations: Float64Array = new Float64Array(16);
  complexities: Float64Array = new Float64Array(16);
  /** Samples recorded in all; the ring holds the last {@link MAX_SAMPLES}. */
  total = 0;

  get size(): number {
    return Math.min(this.total, MAX_SAMPLES);
  }

  push(durationMs: number, complexity: number): void {
    const i = this.total % MAX_SAMPLES;
    if (i >= this.durations.length) {
      const n = Math.min(MAX_SAMPLES, this.durations.length * 2);
      this.durations = grown(this.durations, n);
      this.complexities = grown(this.complexities, n);
    }
    this.durations[i] = durationMs;
    this.complexities[i] = complexity;
    this.total++;
  }

  /** The samples held, oldest first. */
  list(): { durationMs: number; complexity: number }[] {
    const out: { durationMs: number; complexity: number }[] = [];
    const start = this.total > MAX_SAMPLES ? this.total % MAX_SAMPLES : 0;
    for (let k = 0; k < this.size; k++) {
      const i = (start + k) % MAX_SAMPLES;
      out.push({ durationMs: this.durations[i]!, complexity: this.complexities[i]! });
    }
    return out;
  }
}

function grown(from: Float64Array, n: number): Float64Array {
  const to = new Float64Array(n);
  to.set(from);
  return to;
}

/**
 * Per-tool duration samples (the last 1,000 of each) and estimates from them; the tool's
 * `expectedDurationMs` is the prior until samples exist, and {@link DEFAULT_ESTIMATE_MS} (15 s)
 * when it declares none.
 *
 * @example
 * ```ts
 * runner.timing.estimate('list_tasks'); // { estimatedDurationMs: 148, confidence: 'medium', source: 'learned', … }
 * const data = runner.timing.export();  // JSON: seed another deployment
 * otherRunner.timing.import(data);
 * ```
 */
export class TimingModel {
  private readonly samples = new Map<string, Samples>();
  // Sorting up to 1,000 samples per estimate would dominate a run; recomputed as samples grow by ~5 %.
  private readonly cache = new Map<string, { at: number; median: number; p90: number; complexity: number }>();

  constructor(private readonly tools: ReadonlyMap<string, Tool> = new Map()) {}

  /** Records one call's duration (O(1)). */
  record(tool: string, durationMs: number, complexity = 1): void {
    let ring = this.samples.get(tool);
    if (!ring) this.samples.set(tool, (ring = new Samples()));
    ring.push(durationMs, complexity);
  }

  /**
   * Estimates a call of `tool` at `complexity` (default: typical) from the median of its samples,
   * or their 90th percentile with `{ percentile: 'p90' }`; scaled by complexity relative to the
   * samples' median complexity (clamped to 0.25–10×).
   */
  estimate(tool: string, complexity?: number, options: { percentile?: 'median' | 'p90' } = {}): TimingEstimate {
    const def = this.tools.get(tool);
    const timeoutMs = def?.timeoutMs ?? 10_000;
    const ring = this.samples.get(tool);
    const held = ring?.size ?? 0;
    let estimatedDurationMs: number;
    let source: EstimateSource = 'learned';
    if (ring === undefined || held === 0) {
      const declared = def?.expectedDurationMs;
      source = declared === undefined ? 'default' : 'declared';
      estimatedDurationMs = declared ?? DEFAULT_ESTIMATE_MS;
    } else {
      const stats = this.stats(tool, ring);
      estimatedDurationMs = options.percentile === 'p90' ? stats.p90 : stats.median;
      if (complexity !== undefined)
        estimatedDurationMs *= Math.min(10, Math.max(0.25, complexity / (stats.complexity || 1)));
    }
    estimatedDurationMs = Math.round(estimatedDurationMs);
    const samples = held;
    return {
      estimatedDurationMs,
      confidence: confidenceOf(samples),
      source,
      willTimeout: source !== 'default' && estimatedDurationMs > timeoutMs,
      timeoutMs,
      samples,
    };
  }

  private stats(tool: string, ring: Samples): { median: number; p90: number; complexity: number } {
    const cached = this.cache.get(tool);
    if (cached && ring.total - cached.at < Math.max(1, Math.min(cached.at, MAX_SAMPLES) / 20)) return cached;
    // Typed arrays: sorted natively by value, no comparator call per comparison (this runs every ~50 calls per tool).
    const durations = ring.durations.slice(0, ring.size).sort();
    const complexities = ring.complexities.slice(0, ring.size).sort();
    const fresh = {
      at: ring.total,
      median: quantile(durations, 0.5),
      p90: quantile(durations, 0.9),
      complexity: quantile(complexities, 0.5),
    };
    this.cache.set(tool, fresh);
    return fresh;
  }

  /** All samples as JSON. */
  export(): TimingData {
    // Tool names come from outside (imports, learning stores): no inherited keys, `__proto__` kept as data.
    const tools = Object.create(null) as TimingData['tools'];
    for (const [tool, ring] of this.samples) tools[tool] = ring.list();
    return { version: 1, tools };
  }

  /** Adds samples exported elsewhere (e.g. a calibration run). */
  import(data: TimingData): void {
    if (data?.version !== 1 || typeof data.tools !== 'object')
      throw new TypeError('Expected timing data exported by timing.export() (version 1).');
    for (const [tool, list] of Object.entries(data.tools)) {
      if (!Array.isArray(list)) continue;
      for (const s of list) {
        if (typeof s?.durationMs === 'number' && Number.isFinite(s.durationMs) && s.durationMs >= 0)
          this.record(
            tool,
            s.durationMs,
            typeof s.complexity === 'number' && Number.isFinite(s.complexity) ? s.complexity : 1,
          );
      }
    }
  }
}
