// What the inspector sends the page: built field by field from what the runner tells (never a resume
// token, never the raw output or completed values), every value redacted as traces are.
import type { RunEvent } from '../observe/run-events.js';
import { maskText } from '../observe/redact.js';
import type { RedactRule } from '../util/redact.js';
import type { RunResult } from '../observe/result.js';
import { IDENTITY_KEY, type TraceStep } from '../observe/trace.js';
import type { RunInfo } from '../run/durable.js';
import type { Runner } from '../run/runner-api.js';
import type { RunSummary } from '../stores/run-listing.js';
import { walk } from '../util/redact.js';

/** A redactor: hides secret-named keys (the default pattern, identity keys and the rule) and masks secrets in text. */
export type Safe = (value: unknown) => unknown;

/**
 * The redactor of the inspector: the trace redaction (secret
 * keys, identity keys, `rule`) and text masking on every string.
 *
 * @example
 * ```ts
 * safeWith(undefined)({ apiKey: 'k', note: 'password=x' }); // { apiKey: '[REDACTED]', note: 'password=[REDACTED]' }
 * ```
 */
export function safeWith(rule: RedactRule | undefined, identity = false): Safe {
  const keys: RedactRule = (key, value) => (!identity && IDENTITY_KEY.test(key)) || (rule?.(key, value) ?? false);
  return (value) => walk(value, keys, 0, new WeakSet(), (s) => maskText(s, keys));
}

/** A run id's parent when it is a re-run (`x~rerun1` → `x`, `x~rerun2` → `x~rerun1`). */
function rerunOf(runId: string): string | undefined {
  const m = /^(.*)~rerun(\d{1,6})$/s.exec(runId);
  if (!m) return undefined;
  const n = Number(m[2]);
  return n <= 1 ? m[1] : `${m[1]}~rerun${n - 1}`;
}

/** One step of a run's waterfall. */
interface StepView {
  stepNumber: number;
  id: string;
  tool?: string;
  status: string;
  attempts: number;
  latencyMs: number;
  startedAt: string;
  input?: unknown;
  output?: unknown;
  error?: unknown;
  decidedBy?: string;
  /** A step that ran chains (`chain`, `forEach`, `branch`, `loop`): their steps, one entry per item or iteration. */
  children?: StepView[];
  /** What else the trace entry holds (e.g. a sub-chain's or a `forEach`'s items), redacted. */
  extra?: Record<string, unknown>;
}

const KNOWN_STEP_KEYS = new Set([
  'stepNumber',
  'id',
  'tool',
  'status',
  'attempts',
  'latencyMs',
  'startedAt',
  'input',
  'output',
  'error',
  'decidedBy',
  'children',
]);

/** A run as the page shows it. */
export interface RunView {
  runId: string;
  chain: string;
  status: string;
  rerunOf?: string;
  traceStatus?: string;
  startedAt?: string;
  endedAt?: string;
  totalLatencyMs?: number;
  decidedBy?: string;
  journaled: string[];
  steps: StepView[];
  output?: unknown;
  error?: unknown;
  awaiting?: { step: string; tool: string; prompt: string; expiresAt: string };
  declinedStep?: string;
  compensated?: string[];
  compensationFailures?: { step: string; error: unknown }[];
}

function stepView(t: TraceStep, safe: Safe): StepView {
  const v: StepView = {
    stepNumber: t.stepNumber,
    id: t.id,
    status: t.status,
    attempts: t.attempts,
    latencyMs: t.latencyMs,
    startedAt: t.startedAt,
  };
  if (t.tool !== undefined) v.tool = t.tool;
  if (t.input !== undefined) v.input = safe(t.input);
  if (t.output !== undefined) v.output = safe(t.output);
  if (t.error !== undefined) v.error = safe(t.error);
  if (t.decidedBy !== undefined) v.decidedBy = safe(t.decidedBy) as string;
  if (t.children !== undefined) v.children = t.children.map((c) => stepView(c, safe));
  for (const key of Object.keys(t)) {
    if (KNOWN_STEP_KEYS.has(key)) continue;
    (v.extra ??= {})[key] = safe((t as unknown as Record<string, unknown>)[key]);
  }
  return v;
}

/**
 * The page's view of a run from `runner.getRun`: whitelisted fields, all redacted.
 *
 * @example
 * ```ts
 * const view = runView(await runner.getRun(runId), safeWith(undefined));
 * ```
 */
export function runView(info: RunInfo, safe: Safe): RunView {
  const view: RunView = {
    runId: info.runId,
    chain: info.chain,
    status: info.status,
    journaled: [...info.steps],
    steps: [],
  };
  const parent = rerunOf(info.runId);
  if (parent !== undefined) view.rerunOf = parent;
  if (info.decidedBy !== undefined) view.decidedBy = safe(info.decidedBy) as string;
  const r = info.result as RunResult | undefined;
  if (r && typeof r === 'object') {
    const trace = r.trace;
    if (trace && Array.isArray(trace.steps)) {
      view.steps = trace.steps.filter((t) => t.id !== '').map((t) => stepView(t, safe));
      view.traceStatus = trace.status;
      view.startedAt = trace.startedAt;
      view.endedAt = trace.endedAt;
      view.totalLatencyMs = trace.totalLatencyMs;
    }
    switch (r.status) {
      case 'completed':
        view.output = safe(r.output);
        break;
      case 'failed':
        view.error = safe(r.error);
        view.compensated = [...(r.compensated ?? [])];
        if (r.compensationFailures)
          view.compensationFailures = r.compensationFailures.map((f) => ({ step: f.step, error: safe(f.error) }));
        break;
      case 'declined':
        view.declinedStep = r.step;
        break;
      case 'awaiting_confirmation': {
        const c = r.confirmation;
        view.awaiting = { step: c.step, tool: c.tool, prompt: maskText(c.prompt), expiresAt: c.expiresAt };
        break;
      }
    }
  }
  return safe(view) as RunView;
}

/** A run event as the page gets it: its data redacted again (events are redacted when written; this holds the rule). */
export function eventView(e: RunEvent, safe: Safe): RunEvent {
  return { ...e, data: safe(e.data) } as RunEvent;
}

/** A run summary as the page gets it. */
export function summaryView(s: RunSummary, safe: Safe): RunSummary {
  return safe(s) as RunSummary;
}

/** What the runner learned: transitions, common chains, timing estimates, call counters. */
export function learnedView(runner: Runner, safe: Safe): unknown {
  const summary = runner.metrics.chainSummary();
  const tools = Object.keys(runner.timing.export().tools);
  for (const from of Object.keys(summary.transitions)) {
    tools.push(from);
    tools.push(...Object.keys(summary.transitions[from]!));
  }
  const timing = [...new Set(tools)]
    .sort()
    .slice(0, 200)
    .map((tool) => {
      const e = runner.timing.estimate(tool);
      const calls = runner.metrics.callStats(tool);
      return {
        tool,
        estimatedDurationMs: e.estimatedDurationMs,
        confidence: e.confidence,
        source: e.source,
        samples: e.samples,
        timeoutMs: e.timeoutMs,
        willTimeout: e.willTimeout,
        calls,
      };
    });
  // Transitions are keyed by tool names and hold counts: not masked, or a tool named `refresh_token` would be.
  return {
    transitions: summary.transitions,
    ...(safe({
      commonChains: summary.commonChains.slice(0, 20),
      entryTools: summary.entryTools,
      terminalTools: summary.terminalTools,
      timing,
    }) as object),
  };
}
