// Where a durable run stands, and what a run store's listing (`runner.listRuns`) asks for and answers: the
// query, a run's summary, the runs of one context.

/**
 * Where a durable run stands. `running` and `retrying` (running, waiting out a backoff or a
 * Retry-After before its next attempt) are the statuses with a live owner and lease. Parked
 * statuses (`awaiting_confirmation`, `in_doubt`, `waiting`: a sleep or a waitFor) have no
 * owner and no lease and are never claimed by recovery: a decision takes them back
 * (`RunStore.takeParked`, `reopen` for a gate).
 */
export type RunStatus =
  'running' | 'awaiting_confirmation' | 'completed' | 'failed' | 'declined' | 'retrying' | 'in_doubt' | 'waiting';

/** One run as a listing shows it: never its input, output, context or resume token. */
export interface RunSummary {
  runId: string;
  chain: string;
  status: RunStatus;
  /** Epoch ms. */
  startedAt: number;
  /** Epoch ms, once the run completed, failed or was declined. */
  endedAt?: number;
  /** Steps completed (or skipped) so far. */
  steps: number;
  /** Why a failed run failed. */
  error?: { category: string; code: string };
  /** What a run parked at a confirmation gate is waiting for: the gated step and its prompt (redacted). */
  awaiting?: { step: string; question: string };
  /**
   * A run parked `in_doubt`: the plain write whose outcome is unknown (its step and tool, when it started, epoch ms).
   */
  inDoubt?: { step: string; tool: string; startedAt: number };
  /** A run parked `waiting`: its step, wake-up or timeout (epoch ms) and signal (a waitFor). */
  waiting?: { step: string; until?: number; signal?: string };
}

/** Where a page starts: after the run started at `startedAt` with id `runId` (newest first). */
export interface RunListAfter {
  startedAt: number;
  runId: string;
}

/** The listing a run store answers (validated by the runner). */
export interface RunListQuery {
  /** At least one status. */
  statuses: readonly RunStatus[];
  chain?: string;
  /** Inclusive lower bound of `startedAt` (-Infinity: none). */
  since: number;
  /** Exclusive upper bound of `startedAt` (Infinity: none). */
  until: number;
  limit: number;
  after?: RunListAfter;
  /**
   * Only the runs one of these matches (the runs of one user, `runner.listRuns({ context })`). Absent:
   * every run. Given only to a store that declares `listsByContext`.
   */
  contexts?: readonly RunContextMatch[];
}

/** A listing page as a store returns it: `more` when runs past the last one may match. */
export interface RunListResult {
  runs: RunSummary[];
  more: boolean;
}

/**
 * The runs of one context: recorded with `hash` (`RunRecord.contextHash`), of one of `chains` (those
 * whose context schema gives the context that hash) — or, without `chains`, of any chain but `except`
 * (the chains that give it another hash).
 */
export type RunContextMatch = { hash: string; chains: readonly string[] } | { hash: string; except: readonly string[] };

/**
 * Whether a run of `chain` recorded with `hash` is one `match` lists.
 *
 * @example
 * ```ts
 * if (query.contexts?.some((m) => contextMatches(m, run.contextHash, run.chain))) page.push(run);
 * ```
 */
export function contextMatches(match: RunContextMatch, hash: string | undefined, chain: string): boolean {
  if (hash !== match.hash) return false;
  return 'chains' in match ? match.chains.includes(chain) : !match.except.includes(chain);
}
