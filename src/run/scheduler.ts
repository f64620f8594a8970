// Which steps of a segment may start: the plan is a DAG (from refs), ready steps start in
// declaration order as their dependencies finish, and the first failure, gate or decline stops it.
import type { PlannedStep } from '../define/step-kinds.js';
import { RunAbortReason } from '../errors/failure.js';
import type { AbortScope } from '../policies/abort.js';
import { DONE, joinUndone, PENDING, RUNNING, type StepOutcome, type Stopped } from './execution.js';

/**
 * The schedule of one execution segment. The executor's run extends it (no extra object per run)
 * and says how a step starts and what happens once nothing runs any more.
 */
export abstract class Scheduler {
  /** Each step's state (PENDING, RUNNING, DONE), by plan index. */
  protected readonly state: number[];
  /** What stopped the run (a step's index, -1 before any step), if anything did. */
  protected stop: { index: number; outcome: Stopped } | undefined = undefined;
  private running = 0;
  private pumping = false;
  private rescan = false;
  private firstPending = 0;

  /** `done`: ids of steps completed earlier (a resume, a continued run); they are not run again. */
  constructor(
    protected readonly plan: readonly PlannedStep[],
    private readonly results: Record<string, unknown>,
    /** Aborted when a step stops the run while others are in flight. */
    readonly abort: AbortScope,
    done: readonly string[],
  ) {
    this.state = new Array<number>(plan.length).fill(PENDING);
    if (done.length > 0) {
      const index = new Map(plan.map((step) => [step.id, step.index]));
      for (const id of done) {
        const i = index.get(id);
        if (i !== undefined) this.state[i] = DONE;
      }
    }
  }

  /** Starts a step (already marked RUNNING); it must end in exactly one {@link Scheduler.settle}. */
  protected abstract startStep(step: PlannedStep): void;

  /** Nothing runs and nothing more can start: the segment is over. */
  protected abstract finished(): void;

  /**
   * Starts every step whose dependencies are done, in declaration order; finishes when nothing runs.
   * A step that ends synchronously calls back in here; that call only asks the running loop to rescan.
   */
  protected pump(): void {
    if (this.pumping) {
      this.rescan = true;
      return;
    }
    this.pumping = true;
    do {
      this.rescan = false;
      this.launchReady();
    } while (this.rescan);
    this.pumping = false;
    if (this.running === 0) this.finished();
  }

  private launchReady(): void {
    const { plan, state } = this;
    if (this.stop) return;
    // Steps before the first pending one never need looking at again: long chains stay linear.
    while (this.firstPending < plan.length && state[this.firstPending] !== PENDING) this.firstPending++;
    for (let i = this.firstPending; i < plan.length; i++) {
      if (state[i] !== PENDING) continue;
      const deps = plan[i]!.deps;
      let ready = true;
      for (let d = 0; d < deps.length; d++) {
        if (state[deps[d]!] !== DONE) {
          ready = false;
          break;
        }
      }
      if (!ready) continue;
      state[i] = RUNNING;
      this.running++;
      this.startStep(plan[i]!);
    }
  }

  /** A step ended: done (its dependents may start), or the run stops; then schedules what it unblocked. */
  protected settle(step: PlannedStep, outcome: StepOutcome): void {
    this.running--;
    if (outcome.kind === 'ok') {
      this.state[step.index] = DONE;
      if (!outcome.skipped) this.results[step.id] = outcome.value;
    } else if (this.stop?.outcome.kind === 'failed' && outcome.kind === 'failed' && outcome.undone) {
      // A step failing beside the one that stopped the run undid its own sub-chain steps: the run reports them.
      const undone = joinUndone(this.stop.outcome.undone, outcome.undone);
      this.stop = { index: this.stop.index, outcome: { ...this.stop.outcome, undone } };
    } else if (
      !this.stop ||
      (outcome.kind === 'failed' && (this.stop.outcome.kind === 'gate' || this.stop.outcome.kind === 'wait'))
    ) {
      // A failure outranks a pending gate: a run that failed is not checkpointed.
      this.stop = { index: step.index, outcome };
      if (outcome.kind !== 'gate' && outcome.kind !== 'wait' && this.running > 0) {
        this.abort.abort(
          new RunAbortReason(
            'cancelled',
            `Stopped because step ${step.id} ${outcome.kind === 'failed' ? 'failed' : 'was declined'}.`,
          ),
        );
      }
    }
    this.pump();
  }

  /** The ids of the steps done (completed or skipped), in plan order. */
  doneIds(): string[] {
    return this.plan.filter((step) => this.state[step.index] === DONE).map((step) => step.id);
  }
}
