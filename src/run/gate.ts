// Confirmation gates: the question a gated step asks, answered in-process (`confirm`) within the
// deadline, or the run parked — its checkpoint stored, its resume token signed.
import type { ConfirmSpec } from '../define/spec.js';
import type { PlannedStep } from '../define/step-kinds.js';
import type { ChainErrorInfo } from '../errors/categories.js';
import { toErrorInfo } from '../errors/messages.js';
import type { ConfirmationRequest, RunResult } from '../observe/result.js';
import { callStore } from '../stores/guard.js';
import { CheckpointEncodeError } from '../stores/serialize.js';
import { STORE_WAIT_MS } from '../util/timer.js';
import { hashContext, signToken } from './checkpoint.js';
import { describeThrown, iso, StepError } from './execution.js';
import { newId } from './ids.js';
import type { StepHost } from './step-host.js';

/** What a gate asks. */
export interface GateQuestion {
  prompt: string;
  details: unknown;
}

/**
 * The question of a gated step, from its `confirm` spec and the scope; a prompt or details
 * builder that throws is the step's failure.
 *
 * @example
 * ```ts
 * const { prompt } = gateQuestion(host, step, def.confirm);
 * ```
 */
export function gateQuestion(host: StepHost, step: PlannedStep, confirm: ConfirmSpec): GateQuestion {
  try {
    const prompt = typeof confirm.prompt === 'function' ? confirm.prompt(host.scope) : confirm.prompt;
    return { prompt, details: confirm.details?.(host.scope) };
  } catch (error) {
    throw new StepError({
      category: 'internal',
      code: 'confirm_failed',
      message: `Step ${step.id}: building the confirmation threw: ${describeThrown(error)}`,
    });
  }
}

/**
 * Asks the run's in-process `confirm` callback, within the deadline: only `true` approves.
 *
 * @example
 * ```ts
 * if (await askInProcess(host, step, question)) startCall(...);
 * ```
 */
export function askInProcess(host: StepHost, step: PlannedStep, question: GateQuestion): Promise<boolean> {
  const { exec } = host;
  const tool = gateTool(step);
  const id = host.stepKey(step);
  const request: ConfirmationRequest = {
    step: id,
    tool,
    prompt: question.prompt,
    expiresAt: iso(host.deadlineAt),
    ...(question.details !== undefined && { details: question.details }),
  };
  host.recorder.confirmationRequested(host, id, tool, question.prompt, request.expiresAt);
  let answer: boolean | PromiseLike<boolean>;
  try {
    answer = exec.confirm!(request);
  } catch (error) {
    return Promise.reject(error);
  }
  return host
    .bounded(Promise.resolve(answer), `Chain ${exec.chain.name} passed its deadline while waiting for confirmation.`)
    .then((yes) => yes === true);
}

/**
 * Stores the checkpoint of a run stopped before `step` and returns `awaiting_confirmation`; a
 * store that fails or cannot keep the results makes it `failed` (no token handed out).
 *
 * @example
 * ```ts
 * return parkAtGate(host, doneIds, step, question, base, failed);
 * ```
 */
export async function parkAtGate(
  host: StepHost,
  done: string[],
  step: PlannedStep,
  gate: GateQuestion & { at?: string; tool?: string },
  base: Omit<Extract<RunResult, { status: 'declined' }>, 'status' | 'step'>,
  failed: (e: ChainErrorInfo) => RunResult,
): Promise<RunResult> {
  const { exec, calls, gates } = host;
  const { chain } = exec;
  // A gate inside a sub-chain is named by its own step (`done/3/delete`): the step running it runs again on resume.
  const at = gate.at ?? step.id;
  const tool = gate.tool ?? gateTool(step);
  const createdAt = calls.now();
  const expiresAt = createdAt + gates.confirmationTtlMs;
  const id = newId();
  try {
    await callStore(
      () =>
        gates.checkpoints.save({
          v: 1,
          id,
          runId: exec.runId,
          traceId: exec.traceId,
          chain: chain.name,
          fingerprint: chain.fingerprint,
          ...(exec.sessionId !== undefined && { sessionId: exec.sessionId }),
          input: exec.input,
          contextHash: hashContext(exec.context),
          results: exec.results,
          done,
          gate: at,
          ...(exec.kept !== undefined && exec.kept.length > 0 && { nested: exec.kept }),
          ...(exec.generations !== undefined && { generations: Object.fromEntries(exec.generations) }),
          startedAt: exec.startedAt,
          createdAt,
          expiresAt,
          trace: base.trace.steps.filter((t) => t.id !== step.id),
        }),
      Math.min(createdAt + STORE_WAIT_MS, host.deadlineAt),
      calls.now,
      'checkpoint',
    );
  } catch (error) {
    const why =
      error instanceof CheckpointEncodeError
        ? error.info
        : {
            category: 'unavailable' as const,
            code: 'store_unavailable',
            message: `Could not store the checkpoint: ${describeThrown(error)}`,
          };
    return failed(toErrorInfo(why, { step: at, tool }, calls.retryTable));
  }
  const confirmation: ConfirmationRequest = { step: at, tool, prompt: gate.prompt, expiresAt: iso(expiresAt) };
  if (gate.details !== undefined) confirmation.details = gate.details;
  host.recorder.confirmationRequested(host, at, tool, gate.prompt, confirmation.expiresAt);
  return {
    status: 'awaiting_confirmation',
    resumeToken: signToken(id, expiresAt, gates.secret),
    confirmation,
    ...base,
  };
}

/**
 * What a gate names as its `tool`: the step's tool, or for a step that runs chains (§12) their names.
 *
 * @example
 * ```ts
 * gateTool(step); // 'delete_task', or 'complete_one' for a forEach of that chain
 * ```
 */
export function gateTool(step: PlannedStep): string {
  return step.tool?.name ?? (step.calls ? step.calls.map((c) => c.chain.name).join(' | ') : step.kind);
}
