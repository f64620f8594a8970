// Signals (API.md §12): `runner.signal(runId, name, payload)` brings a run parked at a `waitFor` step
// its payload, from any instance. The payload is checked here against the step's schema; the take
// and the continuation are the durable side's (run/durable.ts).
import type { Chain } from '../define/chain.js';
import type { PlannedStep } from '../define/step-kinds.js';
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
 * Checks a signal's name and payload against the step the run waits at; throws {@link SignalRefused}
 * for a payload its schema refuses. Returns the parsed payload, or `undefined` when the run does not
 * wait for this signal.
 *
 * @example
 * ```ts
 * const parsed = signalPayload(chain, waiting, 'review', { ok: true }, runId);
 * ```
 */
export function signalPayload(
  chain: Chain,
  waiting: RunWaiting | undefined,
  name: string,
  payload: unknown,
  runId: string,
): { value: unknown; index: number } | undefined {
  if (!waiting || waiting.signal === undefined || waiting.signal !== name) return undefined;
  const step = plannedAt(chain, waiting.step.split('/'));
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
 * The planned step a (prefixed) step id names: `review`, or inside sub-chains `audit/review`,
 * `done/3/review` (a `forEach` item), `poll/2/review` (a `loop` iteration), `notify/send` (a branch case).
 */
function plannedAt(chain: Chain, path: readonly string[]): PlannedStep | undefined {
  const step = chain.plan.find((p) => p.id === path[0]);
  if (!step || path.length === 1) return step;
  // Items and iterations carry their number after the step's id; a branch's case is not named: try each.
  const rest = step.forEach || step.loop ? path.slice(2) : path.slice(1);
  for (const call of step.calls ?? []) {
    const found = plannedAt(call.chain as Chain, rest);
    if (found) return found;
  }
  return undefined;
}
