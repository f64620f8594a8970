// `runner.watch(runId, { after })`: a run's events read from the run store's event log, page by page
// as the reader pulls them (a reader that stops reading holds nothing), in order, each once, ending
// after `run:end`. A gap — the log dropped events the reader had not read — cuts the reader off.
import type { RunEvent } from '../observe/run-events.js';
import type { ShownTo } from './visibility.js';
import type { RunResult } from '../observe/result.js';
import type { RunStore } from '../stores/run-store.js';
import type { RunEventLog } from '../stores/run-event-log.js';
import { runEndData, type RunEventHub } from './events-log.js';
import { shownTo } from './visibility.js';
import { checkRunId, isValidRunId } from './run-id.js';
import { STORE_WAIT_MS } from '../util/timer.js';

/** Events read from the log per round trip. */
const PAGE = 256;
/** How long one wait for new events lasts before the watcher looks again (and announces itself again). */
const WAIT_MS = 1_000;
/** Quiet waits before a run the store does not know is `not_found`. */
const NOT_FOUND_WAITS = 5;
/**
 * How long the log must stay quiet after this watch found the run ended before the watch ends with a
 * `run:end` of its own. The owner records the end first and appends the last events after it (all of
 * them, for a run nobody watched): the append in flight then, and one more with the rest, each given
 * up after STORE_WAIT_MS (`RunEventWriter.close`).
 */
const ENDED_QUIET_MS = 2 * STORE_WAIT_MS;
/** The statuses after which a run has no more events. */
const FINAL = new Set(['completed', 'failed', 'declined']);

/** Why a watch stopped before `run:end`: `fell_behind` (cut off: resume with `after: lastSeq`), or `not_found`. */
export class RunWatchError extends Error {
  override readonly name = 'RunWatchError';
  constructor(
    readonly code: 'fell_behind' | 'not_found',
    readonly runId: string,
    /** The last seq this watch delivered (0: none): watch again with `{ after: lastSeq }`. */
    readonly lastSeq: number,
    message: string,
  ) {
    super(message);
  }
}

/** Options of `runner.watch`. */
export interface WatchOptions {
  /** Deliver the events after this seq (default 0: from the first). */
  after?: number;
  /** Ends the watch (the iteration ends quietly). */
  signal?: AbortSignal;
  /**
   * Watch the run only if it was started with this trusted context (the signed-in user's): any other
   * run fails `not_found`, as an unknown one does, and none of its events is read.
   */
  context?: object;
}

/**
 * A run this runner started (`stream`): its result once settled (`signal` aborts then), and whether the run
 * store took its run id as this caller's run (`ours`; false: refused, e.g. another's run under that id).
 */
interface Settled {
  result(): RunResult | undefined;
  signal: AbortSignal;
  /** `'joined'`: its own run, in flight elsewhere (this call refused): watched to that run's own end. */
  ours: Promise<boolean | 'joined'>;
}

/** What a watch reads from: the run store, its event log, and this runner's writers. */
export interface WatchSource {
  store: RunStore;
  log: RunEventLog;
  hub: RunEventHub;
  redacted: (value: unknown) => unknown;
  now: () => number;
  /**
   * Registers a watch's stop: the runner aborts it when it closes (at once if it has), so its watches end
   * there (no `run:end` made up), leaving no read waiting. Returns the function that unregisters it.
   */
  enlist(stop: AbortController): () => void;
  /** Whether a recorded run is shown to `context` (`WatchOptions.context`): it was started with it. */
  shownBy(context: object): ShownTo;
}

/**
 * {@link watchRun} as an iterator whose `return()` (a `for await` left early, a cancelled SSE body)
 * ends a wait in flight at once: an async generator would queue it behind that wait, until the run's
 * next event, which may be hours away.
 *
 * @example
 * ```ts
 * const events = { [Symbol.asyncIterator]: () => stoppableWatch(source, runId, options) };
 * ```
 */
export function stoppableWatch(
  source: WatchSource,
  runId: string,
  options: WatchOptions = {},
  settled?: Settled,
): AsyncIterableIterator<RunEvent> {
  const stop = new AbortController();
  const gen = watchRun(source, runId, options, settled, stop);
  return {
    next: () => gen.next(),
    return: () => {
      stop.abort(); // the wait in flight ends, and the generator with it
      return gen.return(undefined);
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

/**
 * The events of `runId` after `options.after`, in order, ending after `run:end` (a run parked `waiting`
 * is watched on to its end). With `settled` (a run this runner started: `stream`), a run that ends
 * without `run:end` in the log (its input refused before it was recorded) ends the watch with a
 * `run:end` made from its result.
 *
 * @example
 * ```ts
 * for await (const e of watchRun(source, runId, { after: 3 }, undefined, new AbortController())) console.log(e.seq);
 * ```
 */
async function* watchRun(
  source: WatchSource,
  runId: string,
  options: WatchOptions = {},
  settled: Settled | undefined,
  stop: AbortController,
): AsyncGenerator<RunEvent, void, undefined> {
  const { store, log, hub } = source;
  let ending = settled;
  const after = options.after ?? 0;
  if (!(Number.isSafeInteger(after) && after >= 0))
    throw new TypeError('Expected `after` to be a non-negative integer (the seq of the last event seen).');
  const context = shownTo(options);
  // A run this runner started whose id the store refused (another's run under it: `run_id_taken`) is never read.
  const mine = settled && isValidRunId(runId) ? await settled.ours : true;
  if (mine === 'joined') ending = undefined; // its end is that run's, not this call's refusal
  if (!isValidRunId(runId) || !mine) {
    // Never read, watched or announced: it names no log, and may be shaped like an announce (a cancel).
    if (!settled) {
      checkRunId(runId); // throws invalid_run_id
      return;
    }
    // A run this runner started under it (`stream`) was refused: its end, made from its result.
    if (!settled.signal.aborted) await new Promise((r) => settled.signal.addEventListener('abort', r, { once: true }));
    const refused = settled.result();
    if (refused) yield { seq: 1, runId, at: source.now(), type: 'run:end', data: runEndData(refused, source.redacted) };
    return;
  }
  let last = after;
  // The watch ends when the caller stops, leaves the iteration (`stop`, aborted by stoppableWatch's return) or the
  // runner closes (`signal`); a wait also ends when the run this runner started settles (`wake`). Listeners
  // removed at the end, not AbortSignal.any: a source that lives on (the caller's, the runner's) would keep every
  // watch's combined signal.
  const signal = stop.signal;
  const halt = (): void => stop.abort();
  const leave = source.enlist(stop);
  if (options.signal?.aborted) stop.abort();
  else options.signal?.addEventListener('abort', halt, { once: true });
  const roused = settled && new AbortController();
  const rouse = (): void => roused!.abort();
  if (roused) {
    if (settled!.signal.aborted || signal.aborted) roused.abort();
    settled!.signal.addEventListener('abort', rouse, { once: true });
    signal.addEventListener('abort', rouse, { once: true });
  }
  let wake = roused ? roused.signal : signal;
  let unwatch = (): void => undefined;
  let announced = 0;
  try {
    // Before the run is marked watched here or announced: a run not shown to this context is not touched.
    if (context !== undefined && !(await startedWithContext(source, runId, context, signal))) {
      if (signal.aborted) return;
      throw new RunWatchError('not_found', runId, after, notFound(runId));
    }
    unwatch = hub.watch(runId);
    if (after > 0) {
      // Resumed after the run's final end (a reconnect that had read it all): nothing more comes, and none may be
      // made up. A run that parked (a gate, a wait, a write in doubt) may still go on: watched as usual.
      const [seen] = await log.read(runId, after - 1, 1);
      if (seen?.seq === after && seen.type === 'run:end' && FINAL.has(seen.data.status as string)) return;
    }
    await log.announce(runId).catch(() => undefined);
    announced = source.now();
    let idle = 0;
    /** When this watch found the run ended with no event after `last` yet (undefined: not so since the last event). */
    let endedSeen: number | undefined;
    for (;;) {
      if (signal.aborted) return;
      const page = await log.read(runId, last, PAGE);
      for (const e of page) {
        if (e.seq !== last + 1) {
          throw new RunWatchError(
            'fell_behind',
            runId,
            last,
            `Watching run ${runId} fell behind: the events after seq ${last} up to ${e.seq - 1} are no longer kept ` +
              `(the log keeps a bounded number per run). Watch again with { after: ${e.seq - 1} } to go on from the ` +
              'oldest kept, or read the result with runner.getRun().',
          );
        }
        last = e.seq;
        yield e;
        // A run parked `waiting` (§12) goes on by itself: its watch goes on to its end.
        if (e.type === 'run:end' && e.data.status !== 'waiting') return;
        if (signal.aborted) return;
      }
      if (page.length > 0) {
        idle = 0;
        endedSeen = undefined;
        continue;
      }
      const result = ending?.result();
      if (result?.status === 'waiting') {
        // Parked (§12): it goes on by itself, and its events (its real end among them) come later; from here it is
        // watched as any run. No `run:end` is made up: its seq would be the next real event's.
        ending = undefined;
        wake = signal;
        continue;
      }
      if (result) {
        // The run is over here and its last events were appended before its result was handed out.
        const rest = await log.read(runId, last, PAGE);
        if (rest.length > 0) continue;
        yield { seq: last + 1, runId, at: source.now(), type: 'run:end', data: runEndData(result, source.redacted) };
        return;
      }
      if (idle > 0 && !ending) {
        // Nothing for a while: the run may not exist, or may have ended without its last events (its owner died after
        // recording the end).
        const run = await store.get(runId);
        // A run about to start (its id handed out first) gets a few seconds to be recorded.
        if (!run && idle < NOT_FOUND_WAITS) {
          await log.wait(runId, last, WAIT_MS, wake);
          idle++;
          continue;
        }
        if (!run) throw new RunWatchError('not_found', runId, last, notFound(runId));
        const ended = run.status !== 'running' && run.status !== 'waiting' && run.result !== undefined;
        // Quiet since the watch began is not enough: it may have waited before the run was even recorded.
        endedSeen = ended ? (endedSeen ?? source.now()) : undefined;
        if (endedSeen !== undefined && source.now() - endedSeen >= ENDED_QUIET_MS) {
          const rest = await log.read(runId, last, PAGE);
          if (rest.length > 0) continue;
          yield {
            seq: last + 1,
            runId,
            at: source.now(),
            type: 'run:end',
            data: runEndData(run.result as RunResult, source.redacted),
          };
          return;
        }
      }
      if (source.now() - announced >= WAIT_MS) {
        // The owner may have subscribed after the last announce, or the run changed owner.
        await log.announce(runId).catch(() => undefined);
        announced = source.now();
      }
      await log.wait(runId, last, WAIT_MS, wake);
      idle++;
    }
  } finally {
    unwatch();
    leave();
    options.signal?.removeEventListener('abort', halt);
    settled?.signal.removeEventListener('abort', rouse);
  }
}

const notFound = (runId: string): string =>
  `Run ${runId} was not found in the run store (never recorded, or past its retention).`;

/**
 * Whether the run is recorded as started with `context`. A run not recorded yet (its id handed out a moment
 * before) is looked for again, soon at first, then each second; one never recorded and one started with another
 * context both fail at the same fixed time, so that the two cannot be told apart.
 */
async function startedWithContext(
  source: WatchSource,
  runId: string,
  context: object,
  signal: AbortSignal,
): Promise<boolean> {
  const shown = source.shownBy(context);
  // The same pauses for both, whatever the store's latency: the waits are counted, not timed.
  let left = NOT_FOUND_WAITS * WAIT_MS;
  for (let pause = 50; ; pause = Math.min(pause * 2, WAIT_MS)) {
    const run = await source.store.get(runId);
    if (run && shown(run)) return true;
    if (signal.aborted || left <= 0) return false;
    const wait = Math.min(pause, left);
    left -= wait;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, wait);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
