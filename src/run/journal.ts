// A durable run's journal: which steps are journaled when, and how a stored run continues from it.
import type { Chain } from '../define/chain.js';
import type { PlannedStep } from '../define/step-kinds.js';
import type { ChainErrorInfo } from '../errors/categories.js';
import type { InDoubtStep, RunResult } from '../observe/result.js';
import type { TraceStep } from '../observe/trace.js';
import type { JournalEntry, StoredRun } from '../stores/run-store.js';
import type { Execution, StepOutcome, Undone } from './execution.js';
import { keepsNested } from './keeps-nested.js';
import { nullRecord } from '../util/record.js';

/**
 * Which steps a chain journals when. A `select` is never journaled: it is a declarative filter of
 * results that are, so a recovered run recomputes it (a store round trip saved per select). A step
 * no other step depends on is journaled with the run's end, in the same write: nothing waits for it,
 * and if the process dies first, recovery runs it again under the same idempotency key. A step only
 * plain writes wait for (through selects) rides on the next journal write: the first of them journals
 * itself as started before it is called (so the step is journaled before any step that depends on it
 * starts, in that write), and a run that ends or parks first journals it with its end.
 */
export interface JournalPlan {
  readonly skip: ReadonlySet<string>;
  readonly atEnd: ReadonlySet<string>;
  readonly defer: ReadonlySet<string>;
}
const journalPlans = new WeakMap<Chain, JournalPlan>();
export function journalPlan(chain: Chain): JournalPlan {
  let plan = journalPlans.get(chain);
  if (!plan) {
    const dependents = new Map<number, PlannedStep[]>();
    for (const step of chain.plan)
      for (const d of step.deps) {
        const list = dependents.get(d);
        if (list) list.push(step);
        else dependents.set(d, [step]);
      }
    // Only plain writes wait for the step: selects are looked through (they are never journaled).
    const onlyWrites = (index: number): boolean =>
      (dependents.get(index) ?? []).every((s) =>
        s.kind === 'select' ? onlyWrites(s.index) : s.kind === 'tool' && isPlainWrite(s.tool),
      );
    const skip = new Set<string>();
    const atEnd = new Set<string>();
    const defer = new Set<string>();
    for (const step of chain.plan) {
      if (step.kind === 'select') skip.add(step.id);
      else if (!dependents.has(step.index)) atEnd.add(step.id);
      else if (onlyWrites(step.index)) defer.add(step.id);
    }
    journalPlans.set(chain, (plan = { skip, atEnd, defer }));
  }
  return plan;
}

/** A write recorded as started before it is called (durable runs): not a read, not declared idempotent. */
export const isPlainWrite = (tool: PlannedStep['tool']): boolean =>
  tool !== undefined && tool.effect !== 'read' && !tool.idempotent;

/** Who decided the run's gate: on the gate's trace entry, in the journal or the recorded result. */
export function decider(run: StoredRun): string | undefined {
  for (const e of run.journal) {
    if (e.trace?.decidedBy !== undefined) return e.trace.decidedBy;
    if (e.decision !== undefined) return e.decision.by;
  }
  const steps = (run.result as RunResult | undefined)?.trace?.steps;
  if (Array.isArray(steps)) for (const t of steps) if (t.decidedBy !== undefined) return t.decidedBy;
  return undefined;
}

/**
 * The execution that continues a stored run from its journal: journaled
 * steps are done, not called again; a compensating run only undoes.
 */
export function continuation(run: StoredRun, chain: Chain): Execution {
  const results = nullRecord<unknown>();
  const done: string[] = [];
  const priorTrace: TraceStep[] = [];
  let compensating: Execution['compensating'];
  let redo: Map<string, number> | undefined;
  let nested: Map<string, JournalEntry[]> | undefined;
  let generations: Map<string, number> | undefined;
  const kept: JournalEntry[] | undefined = keepsNested(chain) ? [] : undefined;
  for (const entry of run.journal) {
    if (entry.compensation === 'start') {
      compensating = { error: entry.error as ChainErrorInfo, undone: [] };
      if (entry.undone) compensating.reported = entry.undone as Undone;
    } else if (entry.compensation !== undefined && compensating !== undefined) {
      (compensating.undone as JournalEntry[]).push(entry);
    } else if (entry.compensation === 'undone') {
      // A failed sub-chain took its own step back before the run failed (or went on, its failure collected):
      // that step is not done. Run again, it writes under its key's next generation.
      const g = undoneStep(nested, kept, entry.step);
      if (g !== undefined) (redo ??= new Map()).set(entry.step, g + 1);
    } else if (entry.compensation !== undefined)
      continue; // a failed undo: the step's effect stands, and a later failure tries again
    else if (entry.started !== undefined || entry.decision !== undefined)
      continue; // marks, not steps
    else if (entry.step.includes('/')) {
      nestUnder((nested ??= new Map()), entry); // a sub-chain's step (§12): see priorNested
      kept?.push(entry);
    } else {
      done.push(entry.step);
      if (entry.skipped !== true) results[entry.step] = entry.value;
      if (entry.trace) priorTrace.push(entry.trace);
      if (entry.generation !== undefined) (generations ??= new Map()).set(entry.step, entry.generation);
    }
  }
  return {
    chain,
    runId: run.runId,
    traceId: run.traceId,
    input: run.input,
    context: (run.context ?? {}) as Record<string, unknown>,
    results,
    done,
    priorTrace,
    startedAt: run.startedAt,
    resumed: true,
    ...(run.sessionId !== undefined && { sessionId: run.sessionId }),
    ...(run.approvedGate !== undefined && { approvedGate: run.approvedGate }),
    ...(compensating && { compensating }),
    ...(redo && { redo }),
    ...(nested && { priorNested: nested }),
    ...(kept && { kept }),
    ...(generations && { generations }),
  };
}

/**
 * The plain writes of a stored run whose outcome is unknown: journaled as `started` with no
 * completed entry of their step after, and no decision after (a `retry: true` decision lets them be
 * called again; its retry journals a `started` of its own). A run that compensates has none: it is
 * only undone, never continued forward.
 *
 * @example
 * ```ts
 * const doubt = writesInDoubt(run); // [{ step: 'refund', tool: 'issue_refund', startedAt, input }]
 * ```
 */
export function writesInDoubt(run: StoredRun): InDoubtStep[] {
  const open = new Map<string, InDoubtStep>();
  for (const e of run.journal) {
    if (e.compensation === 'start') return [];
    if (e.compensation !== undefined) continue; // a failed sub-chain's own undo: its run went on
    if (e.started !== undefined)
      open.set(e.step, {
        step: e.step,
        tool: e.started.tool,
        ...(e.started.input !== undefined && { input: e.started.input }),
        startedAt: e.started.at,
      });
    else if (e.decision !== undefined) open.clear();
    else open.delete(e.step);
  }
  return [...open.values()];
}

/** The ids of a stored run's journaled steps (entries that are neither marks nor compensation), in order. */
export function journaledSteps(run: StoredRun): string[] {
  const steps: string[] = [];
  for (const e of run.journal)
    if (e.compensation === undefined && e.started === undefined && e.decision === undefined) steps.push(e.step);
  return steps;
}

/**
 * Takes a sub-chain step undone by its own sub-chain out of what the journal says is done (its entry under its
 * prefix, and in `kept`): the generation it ran under, or `undefined` when no entry of it is there.
 */
function undoneStep(
  nested: Map<string, JournalEntry[]> | undefined,
  kept: JournalEntry[] | undefined,
  step: string,
): number | undefined {
  const list = nested?.get(step.slice(0, step.lastIndexOf('/')));
  const at = list ? list.findLastIndex((e) => e.step === step) : -1;
  if (at < 0) return undefined;
  const [entry] = list!.splice(at, 1);
  const inKept = kept ? kept.lastIndexOf(entry!) : -1;
  if (inKept >= 0) kept!.splice(inKept, 1);
  return entry!.generation ?? 0;
}

/**
 * Files a journaled sub-chain step (`done/3/complete`) under the prefix of the run that journaled it (`done/3`).
 *
 * @example
 * ```ts
 * nestUnder(priorNested, { step: 'done/3', value }); // priorNested.get('done') holds it
 * ```
 */
export function nestUnder(nested: Map<string, JournalEntry[]>, entry: JournalEntry): void {
  const prefix = entry.step.slice(0, entry.step.lastIndexOf('/'));
  const list = nested.get(prefix);
  if (list) list.push(entry);
  else nested.set(prefix, [entry]);
}

/**
 * What the journal (and a checkpoint's `nested`) keeps of a step that ended ok or skipped.
 *
 * @example
 * ```ts
 * exec.journal(journalEntry(entry, { kind: 'ok', value: output, skipped: false }, 0));
 * ```
 */
export const journalEntry = (
  entry: TraceStep,
  outcome: Extract<StepOutcome, { kind: 'ok' }>,
  generation: number,
): JournalEntry =>
  outcome.skipped
    ? { step: entry.id, skipped: true, trace: entry }
    : generation === 0
      ? { step: entry.id, value: outcome.value, trace: entry }
      : { step: entry.id, value: outcome.value, trace: entry, generation };
