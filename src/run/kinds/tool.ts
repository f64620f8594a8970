// The tool step's runner (its spec type and planner: define/kinds/tool.ts): input built and
// checked, an in-process confirmation or a gate, the call through the pipeline.
import type { ToolStep } from '../../define/spec.js';
import { parseSchema } from '../../define/schema.js';
import type { PlannedStep } from '../../define/step-kinds.js';
import { schemaFailure } from '../pipeline.js';
import { callContext } from '../call-context.js';
import { generationKey, generationStoreKey } from '../../policies/undone.js';
import { describeThrown, StepError, type StepOutcome } from '../execution.js';
import { askInProcess, gateQuestion } from '../gate.js';
import { isPlainWrite } from '../journal.js';
import type { InFlight, StepHost } from '../step-host.js';

/**
 * Runs a tool step (the `tool` entry of the runner table): its input built and checked, its gate
 * (if any) asked in-process or stopped at, its call.
 *
 * @example
 * ```ts
 * const body = runTool(host, step, inFlight);
 * ```
 */
export function runTool(host: StepHost, step: PlannedStep, inFlight: InFlight): StepOutcome | Promise<unknown> {
  const { exec, scope } = host;
  const def = step.step as ToolStep;
  const tool = step.tool!;
  let raw: unknown;
  try {
    raw = step.resolveInput!(scope);
  } catch (error) {
    throw new StepError({
      category: 'internal',
      code: 'input_failed',
      message: `Step ${step.id}: building the input threw: ${describeThrown(error)}`,
    });
  }
  const parsed = parseSchema(tool.input, raw);
  if (!parsed.success)
    throw new StepError(
      schemaFailure(
        'invalid_step_input',
        `Input for tool ${tool.name} (step ${step.id}) does not match its schema`,
        parsed.error.issues,
      ),
    );
  const input = parsed.data;
  if (host.recorder.traceDetail === 'full') inFlight.input = host.recorder.redacted(input);

  if (def.confirm && exec.approvedGate !== host.stepKey(step)) {
    const question = gateQuestion(host, step, def.confirm);
    if (!exec.confirm) return { kind: 'gate', prompt: question.prompt, details: question.details };
    return askInProcess(host, step, question).then((yes) =>
      yes ? startCall(host, step, def, input, inFlight) : { kind: 'declined' as const },
    );
  }
  return startCall(host, step, def, input, inFlight);
}

/** Calls the step's tool through the pipeline; resolves with its output. */
function startCall(
  host: StepHost,
  step: PlannedStep,
  def: ToolStep,
  input: unknown,
  inFlight: InFlight,
): Promise<unknown> {
  const tool = step.tool!;
  // The step's own key is read for writes only; without one, callContext applies the default.
  const key = tool.effect !== 'read' && def.idempotencyKey ? def.idempotencyKey(host.scope) : undefined;
  const ctx = callContext(host.calls, host, host.stepKey(step), tool, input, key, def);
  const redo = host.exec.redo?.get(ctx.step!);
  if (redo !== undefined && ctx.idempotencyKey !== undefined) {
    // Its write was undone (journal.ts): its next generation, as the idempotency policy moves a key past an undo.
    ctx.generation = redo;
    ctx.idempotencyKey = generationKey(ctx.idempotencyKey, redo);
    if (ctx.storeKey !== undefined) ctx.storeKey = generationStoreKey(ctx.storeKey, redo);
  }
  inFlight.ctx = ctx;
  // A plain write's start is recorded first (durable runs): recovery must know it may have happened.
  const before = host.exec.beforeWrite;
  if (before !== undefined && isPlainWrite(tool)) return before(ctx).then(() => host.calls.call(ctx));
  return host.calls.call(ctx);
}
