// The leases a runner holds on its durable runs: one timer renews them all; a call or an undo passes
// its run's fence first, so an owner that lost its lease acts no more.
import { RunAbortReason } from '../errors/failure.js';
import type { AbortScope } from '../policies/abort.js';
import type { RunStore } from '../stores/run-store.js';

/** What a runner knows of a lease it holds. */
export interface Lease {
  /** Epoch ms until which the store last confirmed it. */
  until: number;
  /** Another runner owns the run now: this one calls and records nothing more for it. */
  lost: boolean;
  /** The store failed while the run was journaled: it stopped here, for recovery. */
  failed: unknown;
  /** Aborts the run when the lease is found lost. */
  stop: AbortScope | undefined;
}

/** A run-store call bounded by a deadline (the durable side's `bounded`). */
type Bounded = <T>(what: string, until: number, fn: () => Promise<T>) => Promise<T>;

/**
 * The leases of one runner (one owner id): held while its runs are in flight, renewed together by one
 * timer a third of a lease apart, and checked before every tool call and undo.
 *
 * @example
 * ```ts
 * const leases = new LeaseKeeper(store, owner, 30_000, Date.now, bounded, warn);
 * const lease = leases.hold(runId, Date.now() + 30_000);
 * if ((await leases.fence(runId)) === false) throw lease.failed;
 * ```
 */
export class LeaseKeeper {
  private readonly leases = new Map<string, Lease>();
  private renewal: ReturnType<typeof setInterval> | undefined;
  /** While a timer renewal is in flight, until the lease it asks for: ticks until then skip. */
  private renewingUntil = 0;
  private closed = false;
  /** A lease with less than this left is renewed (one store round trip) before a call or an undo is made. */
  private readonly margin: number;

  constructor(
    private readonly store: RunStore,
    private readonly owner: string,
    private readonly leaseMs: number,
    private readonly now: () => number,
    private readonly bounded: Bounded,
    private readonly warn: (error: unknown, what: string) => void,
  ) {
    this.margin = Math.max(1, Math.floor(leaseMs / 2));
  }

  /** The lease held on `runId`, if any. */
  get(runId: string): Lease | undefined {
    return this.leases.get(runId);
  }

  /** Holds `runId` until `until`; the renewal timer starts with the first lease (or runs on from the last). */
  hold(runId: string, until: number): Lease {
    const lease: Lease = { until, lost: false, failed: undefined, stop: undefined };
    this.leases.set(runId, lease);
    if (this.renewal === undefined && !this.closed) {
      this.renewal = setInterval(() => this.tick(), Math.max(1, Math.floor(this.leaseMs / 3)));
      this.renewal.unref?.();
    }
    return lease;
  }

  /**
   * Stops holding `runId`. The timer outlives the last lease until its next tick finds none (it keeps
   * no process alive): runs one after the other share one timer instead of setting and clearing one each.
   */
  release(runId: string): void {
    this.leases.delete(runId);
  }

  /**
   * The lease is another runner's now: the run's calls are aborted
   * (their tools see `signal`), nothing more is called or undone.
   */
  lose(lease: Lease): void {
    if (lease.lost) return;
    lease.lost = true;
    lease.stop?.abort(new RunAbortReason('cancelled', 'Another runner took the run over.'));
  }

  /**
   * Whether this runner may still act for `runId` (call a tool, undo): its lease holds with room to
   * spare, or a renewal confirms it now. A lost lease is never regained.
   */
  fence(runId: string): boolean | Promise<boolean> {
    const lease = this.leases.get(runId);
    if (!lease || lease.lost || lease.failed) return false;
    const t = this.now();
    if (lease.until - t > this.margin) return true;
    const until = t + this.leaseMs;
    return this.bounded('renew', until, () => this.store.renew(this.owner, [runId], until)).then(
      (held) => {
        this.renewed([runId], held, until);
        return !lease.lost;
      },
      (error: unknown) => {
        lease.failed = error;
        return false;
      },
    );
  }

  /** Stops renewing and forgets every lease: the runs stay recorded, for another instance to recover. */
  close(): void {
    this.closed = true;
    if (this.renewal !== undefined) clearInterval(this.renewal);
    this.renewal = undefined;
    this.leases.clear();
  }

  private tick(): void {
    // One renewal at a time: during a partition, renewals would otherwise pile up in the store's queue.
    // One unanswered past the lease it asked for no longer blocks the next (no timer of its own for that).
    if (this.leases.size === 0) {
      clearInterval(this.renewal);
      this.renewal = undefined;
      return;
    }
    const t = this.now();
    if (t < this.renewingUntil) return;
    const ids = [...this.leases.keys()];
    const until = t + this.leaseMs;
    this.renewingUntil = until;
    const settled = (): void => {
      if (this.renewingUntil === until) this.renewingUntil = 0;
    };
    void this.store
      .renew(this.owner, ids, until)
      .then(
        (held) => this.renewed(ids, held, until),
        (error: unknown) => this.warn(error, 'lease renewal failed'),
      )
      .then(settled, settled);
  }

  /** What a renewal answered: the runs still held get their new lease, the others are lost (fenced off). */
  private renewed(ids: readonly string[], held: unknown, until: number): void {
    // A store predating the answer (void) is taken at its word.
    const kept = Array.isArray(held) ? new Set<string>(held as string[]) : undefined;
    for (const id of ids) {
      const lease = this.leases.get(id);
      if (!lease) continue;
      if (!kept || kept.has(id)) lease.until = Math.max(lease.until, until);
      else this.lose(lease);
    }
  }
}
