// The step kinds: a tool step (input built and checked, an in-process confirmation, the call), a
// select step, a compute step, and the `when` that may skip any of them.
import type { ComputeStep, SelectStep, ToolStep } from '../define/chain.js';
import type { Scope } from '../define/ref.js';
import { parseSchema } from '../define/schema.js';
import type { PlannedStep } from '../define/validate.js';
import { RunAbortReason } from '../errors/classify.js';
import { schemaFailure } from './pipeline.js';
import { callContext } from './call-context.js';
import { describeThrown, isThenable, SKIPPED, StepError, type StepOutcome } from './execution.js';
import { askInProcess, gateQuestion } from './gate.js';
import type { InFlight, StepHost } from './step-host.js';

/**
 * What a step does: an outcome at once, or a promise. A tool step's promise resolves with the
 * tool's output (no wrapping hop: every step in flight would keep one); any other with its outcome.
 *
 * @example
 * ```ts
 * const body = stepBody(host, step, inFlight);
 * ```
 */
export function stepBody(host: StepHost, step: PlannedStep, inFlight: InFlight): StepOutcome | Promise<unknown> {
  const when = step.step.when;
  if (when) {
    const whenFailed = (error: unknown): never => {
      if (error instanceof RunAbortReason) throw error;
      throw new StepError({ category: 'internal', code: 'when_failed', message: `Step ${step.id}: \`when\` threw: ${describeThrown(error)}` });
    };
    let go: unknown;
    try {
      go = when(host.scope);
    } catch (error) {
      whenFailed(error);
    }
    // An async `when` is awaited (a pending Promise is not `false`), within the run's deadline.
    if (isThenable(go)) {
      return host.bounded(go, deadlineIn(host, `\`when\` of step ${step.id}`)).then((v) => (v === false ? SKIPPED : kindBody(host, step, inFlight)), whenFailed);
    }
    if (go === false) return SKIPPED;
  }
  return kindBody(host, step, inFlight);
}

function kindBody(host: StepHost, step: PlannedStep, inFlight: InFlight): StepOutcome | Promise<unknown> {
  if (step.kind === 'compute') return compute(host, step, step.step as ComputeStep);
  if (step.kind === 'select') return selectItems(step, step.step as SelectStep, host.scope);
  return toolStep(host, step, step.step as ToolStep, inFlight);
}

const deadlineIn = (host: StepHost, what: string): string => `Chain ${host.exec.chain.name} passed its deadline in ${what}.`;

/**
 * A select step: the items of `from` that match, as `expect` says; no match and several-for-one are failures.
 *
 * @example
 * ```ts
 * const outcome = selectItems(step, step.step as SelectStep, scope);
 * ```
 */
export function selectItems(step: PlannedStep, def: SelectStep, scope: Scope): StepOutcome {
  const { from, expect, noMatch } = def.select;
  const items = from.resolve(scope);
  if (!Array.isArray(items)) throw new StepError({ category: 'validation', code: 'not_an_array', message: `Step ${step.id}: ${from} is not an array.` });
  const matches = items.filter(step.matcher!(scope));
  if (matches.length === 0) {
    throw new StepError({ category: 'not_found', code: 'no_match', message: `Step ${step.id}: none of the ${items.length} item(s) in ${from} matched.` }, typeof noMatch === 'string' ? { userMessage: noMatch } : {});
  }
  if (expect === 'one' && matches.length > 1) {
    throw new StepError(
      { category: 'ambiguous', code: 'ambiguous', message: `Step ${step.id}: ${matches.length} items in ${from} matched; expected one.` },
      { candidates: matches, userMessage: `${matches.length} items match. Which one did you mean?` },
    );
  }
  return { kind: 'ok', value: expect === 'all' ? matches : matches[0], skipped: false };
}

function compute(host: StepHost, step: PlannedStep, def: ComputeStep): StepOutcome | Promise<StepOutcome> {
  const threw = (error: unknown): never => {
    if (error instanceof RunAbortReason) throw error;
    throw new StepError({ category: 'internal', code: 'compute_failed', message: `Step ${step.id}: compute threw: ${describeThrown(error)}` });
  };
  let value: unknown;
  try {
    value = def.compute(host.scope);
  } catch (error) {
    threw(error);
  }
  if (isThenable(value)) return host.bounded(value, deadlineIn(host, `compute step ${step.id}`)).then((v) => computedValue(step, def, v), threw);
  return computedValue(step, def, value);
}

/** A compute step's value, checked against its `output` schema when it has one. */
function computedValue(step: PlannedStep, def: ComputeStep, value: unknown): StepOutcome {
  if (def.output) {
    const parsed = parseSchema(def.output, value);
    if (!parsed.success) throw new StepError(schemaFailure('invalid_output', `Step ${step.id} computed a value that does not match its output schema`, parsed.error.issues));
    value = parsed.data;
  }
  return { kind: 'ok', value, skipped: false };
}

/** A tool step: its input built and checked, its gate (if any) asked in-process or stopped at, its call. */
function toolStep(host: StepHost, step: PlannedStep, def: ToolStep, inFlight: InFlight): StepOutcome | Promise<unknown> {
  const { exec, scope } = host;
  const tool = step.tool!;
  let raw: unknown;
  try {
    raw = step.resolveInput!(scope);
  } catch (error) {
    throw new StepError({ category: 'internal', code: 'input_failed', message: `Step ${step.id}: building the input threw: ${describeThrown(error)}` });
  }
  const parsed = parseSchema(tool.input, raw);
  if (!parsed.success) throw new StepError(schemaFailure('invalid_step_input', `Input for tool ${tool.name} (step ${step.id}) does not match its schema`, parsed.error.issues));
  const input = parsed.data;
  if (host.recorder.traceDetail === 'full') inFlight.input = host.recorder.redacted(input);

  if (def.confirm && exec.approvedGate !== step.id) {
    const question = gateQuestion(host, step, def.confirm);
    if (!exec.confirm) return { kind: 'gate', prompt: question.prompt, details: question.details };
    return askInProcess(host, step, question).then((yes) => (yes ? startCall(host, step, def, input, inFlight) : { kind: 'declined' as const }));
  }
  return startCall(host, step, def, input, inFlight);
}

/** Calls the step's tool through the pipeline; resolves with its output. */
function startCall(host: StepHost, step: PlannedStep, def: ToolStep, input: unknown, inFlight: InFlight): Promise<unknown> {
  const tool = step.tool!;
  // The step's own key is read for writes only; without one, callContext applies the default.
  const key = tool.effect !== 'read' && def.idempotencyKey ? def.idempotencyKey(host.scope) : undefined;
  const ctx = callContext(host.calls, host, step.id, tool, input, key, def);
  inFlight.ctx = ctx;
  return host.calls.call(ctx);
}
