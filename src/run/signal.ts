// Signals (API.md §12): `runner.signal(runId, name, payload)` brings a run parked at a `waitFor` step
// its payload, from any instance. The payload is checked here against the step's schema; the take
// and the continuation are the durable side's (run/durable.ts).
import type { Chain } from '../define/chain.js';
import type { PlannedStep } from '../define/step-kinds.js';
import type { Scope } from '../define/ref.js';
import type { Execution } from './execution.js';
import { priorScope } from './prior-undo.js';
import { parseSchema, type SchemaIssue } from '../define/schema.js';
import type { RunResult, RunWaiting } from '../observe/result.js';

/**
 * What `runner.signal` answers: the continued run's result (it ran to its end or parked again),
 * `'not_found'` (no such run), or `'not_waiting'` (it does not wait for this signal: another signal
 * took it first, it ended, or its wait timed out).
 */
export type SignalResult<O = unknown> = RunResult<O> | 'not_found' | 'not_waiting';

/**
 * A signal's payload refused by its `waitFor` step's schema: `runner.signal` rejects with it and
 * the run keeps waiting.
 *
 * @example
 * ```ts
 * try {
 *   await runner.signal(runId, 'review', { ok: 'yes' });
 * } catch (e) {
 *   if (e instanceof SignalRefused) console.log(e.issues);
 * }
 * ```
 */
export class SignalRefused extends Error {
  override readonly name = 'SignalRefused';
  readonly category = 'invalid_input' as const;
  readonly code = 'invalid_signal' as const;
  constructor(
    message: string,
    readonly issues: readonly SchemaIssue[],
  ) {
    super(message);
  }
}

/**
 * Checks a signal's name and payload against the step the run waits at (found through the run's
 * journal, `exec`: inside a branch, the case that ran); throws {@link SignalRefused} for a payload
 * its schema refuses. Returns the parsed payload, or `undefined` when the run does not wait for this signal.
 *
 * @example
 * ```ts
 * const parsed = signalPayload(continuation(run, chain), waiting, 'review', { ok: true }, runId);
 * ```
 */
export function signalPayload(
  exec: Execution,
  waiting: RunWaiting | undefined,
  name: string,
  payload: unknown,
  runId: string,
): { value: unknown; index: number } | undefined {
  if (!waiting || waiting.signal === undefined || waiting.signal !== name) return undefined;
  const top: Scope = { input: exec.input, context: exec.context, results: exec.results };
  const step = plannedAt(exec, exec.chain, waiting.step.split('/'), '', top);
  const spec = step?.waitFor;
  if (!spec) return undefined;
  const parsed = parseSchema(spec.schema, payload);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const where = first?.path && first.path.length > 0 ? ` at ${first.path.map(String).join('.')}` : '';
    throw new SignalRefused(
      `Signal '${name}' for run ${runId}: the payload does not match step ${waiting.step}'s schema${where}: ` +
        `${first?.message ?? 'invalid'}. The run keeps waiting.`,
      parsed.error.issues,
    );
  }
  return { value: parsed.data, index: step.index };
}

/**
 * The planned step a (prefixed) step id names in a run: `review`, or inside sub-chains `audit/review`,
 * `done/3/review` (a `forEach` item), `poll/2/review` (a `loop` iteration), `notify/review` (in the
 * branch case that ran: its `on` applied again to the scope rebuilt from the journal).
 */
function plannedAt(
  exec: Execution,
  chain: Chain,
  path: readonly string[],
  prefix: string,
  scope: Scope,
): PlannedStep | undefined {
  const step = chain.plan.find((p) => p.id === path[0]);
  if (!step || path.length === 1) return step;
  const calls = step.calls;
  if (!calls) return undefined;
  const key = prefix === '' ? step.id : `${prefix}/${step.id}`;
  let index = 0;
  let unit = scope;
  let rest = path.slice(1);
  let at = key;
  if (step.forEach || step.loop) {
    // Items and iterations carry their number after the step's id.
    at = `${key}/${path[1]}`;
    rest = path.slice(2);
    if (step.forEach) {
      const items = attempt(() => step.forEach!.over.resolve(scope));
      unit = { ...scope, item: Array.isArray(items) ? items[Number(path[1])] : undefined } as Scope;
    }
  } else if (step.branch) {
    const { on, names } = step.branch;
    const value = attempt(() => on(scope));
    index = typeof value === 'string' ? names.indexOf(value) : -1;
    if (index < 0) index = names.length; // its `default`
  }
  const call = calls[index];
  if (!call) return undefined;
  const sub = call.chain as Chain;
  return plannedAt(
    exec,
    sub,
    rest,
    at,
    priorScope(
      exec,
      sub,
      at,
      attempt(() => call.resolveInput(unit)),
      scope,
    ),
  );
}

/** A mapping applied again; one that throws now gives `undefined`. */
function attempt(fn: () => unknown): unknown {
  try {
    return fn();
  } catch {
    return undefined;
  }
}
