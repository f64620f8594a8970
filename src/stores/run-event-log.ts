// The event log of a run store (run events: `watch`, `stream`): what a store keeps of each run's
// events, and the last events a run's end may carry.
import type { RunEvent, RunEventDraft } from '../observe/run-events.js';

/**
 * The event log of a run store
 * ([Watching runs](https://github.com/chainkit-dev/chainkit/blob/main/docs/guides/watching-runs.md)): each run's
 * events in order, numbered by the store (`seq` from 1, strictly increasing per run), kept as long as their run, at
 * most a bounded number per run (the oldest go first: a reader that falls that far behind is cut off).
 */
export interface RunEventLog {
  /** Appends cost no round trip (in-process): the runner appends each event as it happens instead of batching. */
  readonly local?: boolean;
  /**
   * Appends encoded events (`encodeRunValue` of a {@link RunEventDraft}, in order) and returns the
   * last `seq` given. `keepMs`: the run ended or parked, keep its events that long; absent: kept
   * while the run is in flight.
   */
  append(runId: string, events: readonly string[], keepMs?: number): Promise<number>;
  /** Up to `limit` events with `seq > after`, in order (fewer, or none, when there are no more yet). */
  read(runId: string, after: number, limit: number): Promise<RunEvent[]>;
  /** Settles when an event after `after` may have been appended, after `timeoutMs`, or when `signal` aborts. */
  wait(runId: string, after: number, timeoutMs: number, signal?: AbortSignal): Promise<void>;
  /** Tells the run's owner, on whichever instance, that someone watches: it sends events as they happen. */
  announce(runId: string): Promise<void>;
  /** Calls `listener` with the run id of every announce (any instance's); returns the unsubscribe. */
  onAnnounce(listener: (runId: string) => void): () => void;
  /** Releases what the log opened (connections for waiting and announcing). */
  close?(): Promise<void>;
}

/** A run's last events, appended with its end (`RunStore.finishWithEvents`). */
export interface LastEvents {
  /** Encoded ({@link RunEventLog.append}'s form), in order, `run:end` last. */
  events: readonly string[];
  /** How long the run's events are kept from now. */
  keepMs: number;
  /**
   * Someone watches the run, as far as its owner knows: readers waiting for its events are woken at once.
   * Otherwise the store may skip the wake-up (a reader that began as the run ended reads them on its next poll).
   */
  watched: boolean;
}
