// A run stopped at a confirmation gate: its checkpoint stored, its resume token signed.
import type { Chain } from '../define/chain.js';
import type { PlannedStep } from '../define/validate.js';
import type { ChainErrorInfo } from '../errors/categories.js';
import { toErrorInfo } from '../errors/messages.js';
import { listening, safeEmit } from '../observe/events.js';
import { callStore } from '../stores/guard.js';
import { CheckpointEncodeError } from '../stores/serialize.js';
import { hashContext, signToken } from './checkpoint.js';
import { newId } from './ids.js';
import { describeThrown, iso, type Execution } from './step.js';
import type { ConfirmationRequest, Core, RunResult } from './types.js';

/** How long a checkpoint store may take to answer (and never past the deadline). */
const STORE_WAIT_MS = 10_000;

/**
 * Stores the checkpoint of a run stopped before step `p` and returns `awaiting_confirmation`; a
 * store that fails or cannot keep the results makes it `failed` (no token handed out).
 */
export async function parkAtGate(
  core: Core, x: Execution, chain: Chain, done: string[], deadlineAt: number,
  p: PlannedStep, gate: { prompt: string; details: unknown },
  base: Omit<Extract<RunResult, { status: 'declined' }>, 'status' | 'step'>, failed: (e: ChainErrorInfo) => RunResult,
): Promise<RunResult> {
  const createdAt = core.now();
  const expiresAt = createdAt + core.confirmationTtlMs;
  const id = newId();
  try {
    await callStore(() => core.checkpoints.save({
      v: 1,
      id,
      runId: x.runId,
      traceId: x.traceId,
      chain: chain.name,
      fingerprint: chain.fingerprint,
      ...(x.sessionId !== undefined && { sessionId: x.sessionId }),
      input: x.input,
      contextHash: hashContext(x.context),
      results: x.results,
      done: done,
      gate: p.id,
      startedAt: x.startedAt,
      createdAt,
      expiresAt,
      trace: base.trace.steps.filter((t) => t.id !== p.id),
    }), Math.min(createdAt + STORE_WAIT_MS, deadlineAt), core.now, 'checkpoint');
  } catch (error) {
    const why = error instanceof CheckpointEncodeError ? error.info : { category: 'unavailable' as const, code: 'store_unavailable', message: `Could not store the checkpoint: ${describeThrown(error)}` };
    return failed(toErrorInfo(why, { step: p.id, tool: p.tool!.name }, core.retryTable));
  }
  const confirmation: ConfirmationRequest = { step: p.id, tool: p.tool!.name, prompt: gate.prompt, expiresAt: iso(expiresAt) };
  if (gate.details !== undefined) confirmation.details = gate.details;
  if (listening(core.events, 'confirmation:requested')) {
    safeEmit(core.events, 'confirmation:requested', { runId: x.runId, traceId: x.traceId, chain: chain.name, step: p.id, tool: p.tool!.name, prompt: gate.prompt, expiresAt: confirmation.expiresAt });
  }
  return { status: 'awaiting_confirmation', resumeToken: signToken(id, expiresAt, core.secret), confirmation, ...base };
}
