// The forEach step's runner (its spec type and planner: define/kinds/for-each.ts): one nested run of
// the chain per element, at most `concurrency` at once; each finished item journaled (`step/i`) in a
// durable run, so a recovered run runs only the items that had not finished.
import type { Chain } from '../../define/chain.js';
import type { ItemScope } from '../../define/spec.js';
import type { PlannedStep } from '../../define/step-kinds.js';
import { RunAbortReason } from '../../errors/failure.js';
import type { TraceStep } from '../../observe/trace.js';
import { AbortScope } from '../../policies/abort.js';
import { joinUndone, StepError, type StepOutcome } from '../execution.js';
import type { UndoUnit } from '../compensate.js';
import type { InFlight, NestedEnd, StepHost } from '../step-host.js';
import { priorIndexes, priorUnitUndo } from '../prior-undo.js';
import { gated, journalUnit, nestedInput, priorUnits, runNested, unitEntry, unitFailure } from '../sub-run.js';

/**
 * Runs a forEach step (the `forEach` entry of the runner table): never more than `concurrency` items
 * in flight; with `onItemError: 'fail'` the first failed item stops the others and fails the step.
 *
 * @example
 * ```ts
 * const outcome = await runForEach(host, step, inFlight);
 * ```
 */
export function runForEach(host: StepHost, step: PlannedStep, inFlight: InFlight): StepOutcome | Promise<StepOutcome> {
  const { over, concurrency, collect } = step.forEach!;
  const items = over.resolve(host.scope);
  if (!Array.isArray(items))
    throw new StepError({
      category: 'validation',
      code: 'not_an_array',
      message: `Step ${step.id}: ${over} is not an array.`,
    });
  return gated(host, step, () => new ItemRun(host, step, items, concurrency, collect, inFlight).start());
}

/** One forEach step in flight: its items' pool. */
class ItemRun {
  private readonly key: string;
  private readonly values: unknown[];
  private readonly entries: (TraceStep | undefined)[];
  /** By item index: the completed steps with `compensate` of the items that ended ok (made at the first). */
  private undo: (UndoUnit[] | undefined)[] | undefined;
  private readonly group = new AbortScope();
  private readonly prior;
  private next = 0;
  private running = 0;
  /** In `launch`'s loop: an item that ends synchronously (its input could not be built) must not recurse into it. */
  private launching = false;
  private stop: StepOutcome | undefined;
  private resolve!: (outcome: StepOutcome) => void;

  constructor(
    private readonly host: StepHost,
    private readonly step: PlannedStep,
    private readonly items: readonly unknown[],
    private readonly concurrency: number,
    private readonly collect: boolean,
    private readonly inFlight: InFlight,
  ) {
    this.key = host.stepKey(step);
    this.values = new Array<unknown>(items.length);
    this.entries = new Array<TraceStep | undefined>(items.length);
    this.prior = priorUnits(host.exec, this.key);
  }

  start(): Promise<StepOutcome> {
    this.host.abort.link(this.group);
    return new Promise<StepOutcome>((resolve) => {
      this.resolve = resolve;
      this.launch();
    });
  }

  /** Starts items while fewer than `concurrency` run; ends the step when none runs and none is left. */
  private launch(): void {
    // Its loop re-reads `running` and `next`: a `done()` from within it (an item failing at once) needs
    // nothing more, and a recursion per item would overflow the stack on a long run of such items.
    if (this.launching) return;
    this.launching = true;
    const { items, prior } = this;
    while (
      this.running < this.concurrency &&
      this.next < items.length &&
      this.stop === undefined &&
      !this.group.aborted &&
      !this.pastDeadline()
    ) {
      const i = this.next++;
      const kept = prior?.get(i);
      if (kept) {
        // Finished in an earlier segment (a recovered or resumed run): not run again, undone if the run fails.
        this.values[i] = kept.value;
        this.entries[i] = kept.trace;
        // A collected failure undid its own steps as it failed: not again.
        if (!this.collect || (kept.value as { ok?: unknown } | undefined)?.ok !== false) {
          const undo = priorUnitUndo(this.host.exec, this.step, this.key, i, this.host.scope);
          if (undo.length > 0) (this.undo ??= [])[i] = undo;
        }
        continue;
      }
      this.running++;
      const started = this.host.calls.now();
      const id = `${this.key}/${i}`;
      const failed = (error: unknown): void =>
        this.ended(
          i,
          id,
          { outcome: { kind: 'failed', error: unitFailure(this.host, id, error) }, trace: [] },
          started,
        );
      let end: Promise<NestedEnd>;
      try {
        end = this.item(i, id);
      } catch (error) {
        // The item's input could not be built: that item fails (collected, or stopping the step).
        failed(error);
        continue;
      }
      end.then((e) => this.ended(i, id, e, started), failed);
    }
    this.launching = false;
    if (this.running === 0 && (this.next >= items.length || this.stop !== undefined || this.group.aborted))
      this.finish();
  }

  private item(i: number, id: string): Promise<NestedEnd> {
    const { host, step } = this;
    const call = step.calls![0]!;
    const scope: ItemScope = {
      input: host.scope.input,
      context: host.scope.context,
      results: host.scope.results,
      item: this.items[i],
    };
    const input = nestedInput(step, call.resolveInput, scope);
    return runNested(host, id, call.chain as Chain, input, this.group);
  }

  private ended(i: number, id: string, end: NestedEnd, started: number): void {
    const { host } = this;
    const entry = unitEntry(i + 1, id, end, started, host.calls.now());
    this.entries[i] = entry;
    host.recorder.itemEnded(host, this.key, i, entry);
    const { outcome } = end;
    if (end.undo !== undefined && end.undo.length > 0) (this.undo ??= [])[i] = end.undo;
    if (outcome.kind === 'gate' || outcome.kind === 'wait') {
      // No item starts after it; those in flight end (or stop at gates or waits of their own, met
      // again once this one is over): then the run parks here, the items that finished kept.
      this.stop ??= outcome;
      return this.done();
    }
    if (outcome.kind === 'ok') this.values[i] = this.collect ? { ok: true, value: outcome.value } : outcome.value;
    else if (outcome.kind === 'failed' && this.collect && !this.group.aborted && !this.pastDeadline()) {
      // A failure is collected; a decline is the user's answer, and ends the run `declined` (as through a resume).
      this.values[i] = { ok: false, error: outcome.error };
    } else {
      // A failure or a decline stops the step even when an item waits at a gate (it would fail on resume).
      const first = this.stop === undefined || this.stop.kind === 'gate' || this.stop.kind === 'wait';
      // An item failing beside the one that stopped the step undid its own steps too: the run reports them.
      if (!first && this.stop!.kind === 'failed' && outcome.kind === 'failed' && outcome.undone)
        this.stop = { ...this.stop!, undone: joinUndone(this.stop!.undone, outcome.undone) };
      if (first) {
        this.stop = outcome;
        this.group.abort(
          new RunAbortReason(
            'cancelled',
            `Stopped because item ${i} of step ${this.step.id} ` +
              `${outcome.kind === 'failed' ? 'failed' : 'was declined'}.`,
          ),
        );
      }
      return this.done();
    }
    // A durable run journals the item before it counts as finished (a run with gates inside keeps it too).
    if (host.exec.journal === undefined && host.exec.kept === undefined) return this.done();
    journalUnit(host.exec, { step: id, value: this.values[i], trace: entry }).then(
      (kept) => (kept === false ? this.failed(id, false) : this.done()),
      (error: unknown) => this.failed(id, error),
    );
  }

  /**
   * Whether the run's deadline has passed: then no item starts and no failure is collected; the step
   * (and the run) fails `deadline_exceeded`, its items in flight cut off.
   */
  private pastDeadline(): boolean {
    if (this.host.calls.now() < this.host.deadlineAt) return false;
    if (this.stop === undefined) {
      const reason = new RunAbortReason('deadline', `Step ${this.step.id} passed the run's deadline.`);
      this.stop = { kind: 'failed', error: unitFailure(this.host, this.key, reason) };
      this.group.abort(reason);
    }
    return true;
  }

  private failed(id: string, error: unknown): void {
    if (this.stop === undefined) {
      this.stop = { kind: 'failed', error: unitFailure(this.host, id, error) };
      this.group.abort(new RunAbortReason('cancelled', `Stopped because ${id} could not be journaled.`));
    }
    this.done();
  }

  private done(): void {
    this.running--;
    this.launch();
  }

  private finish(): void {
    this.host.abort.unlink(this.group);
    const children: TraceStep[] = [];
    for (const e of this.entries) if (e !== undefined) children.push(e);
    this.inFlight.children = children;
    // Stopped before every item was looked at (a cancel, a deadline, a failure, a gate): what an
    // earlier segment finished, or began, in the items not reached is undone too if the run fails.
    if (this.next < this.items.length && this.host.exec.priorNested !== undefined)
      for (const i of priorIndexes(this.host.exec, this.step, this.key, this.next, true)) {
        const undo = priorUnitUndo(this.host.exec, this.step, this.key, i, this.host.scope);
        if (undo.length > 0) (this.undo ??= [])[i] = undo;
      }
    // Items that completed are undone if the run fails, this step's own failure included; in item order.
    if (this.undo !== undefined) {
      const units: UndoUnit[] = [];
      for (const u of this.undo) if (u !== undefined) units.push(...u);
      this.inFlight.undo = units;
    }
    if (this.stop) return this.resolve(this.stop);
    // The run stopped (cancel, deadline, another step's failure) before every item ran.
    if (this.next < this.items.length)
      return this.resolve({
        kind: 'failed',
        error: unitFailure(this.host, this.key, this.host.abort.reason ?? this.group.reason),
      });
    this.resolve({ kind: 'ok', value: this.values, skipped: false });
  }
}
