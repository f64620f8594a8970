// The runner: made of its parts (parts.ts), it runs and resumes chains (prepare.ts, then the
// executor), calls single tools (direct-call.ts) and closes everything it opened.
import type { Chain } from '../define/chain.js';
import { isChain } from '../define/chain.js';
import { RunAbortReason } from '../errors/failure.js';
import { DefinitionError } from '../errors/definition-error.js';
import { nextTools, relevantChains } from '../guidance/suggest.js';
import type { ListRunsFilter, RunPage } from '../stores/run-list.js';
import { listRuns } from './list-runs.js';
import { callByName } from './direct-call.js';
import { DurableRuns, type RunInfo } from './durable.js';
import type { StoredRun } from '../stores/run-store.js';
import { servedCheck, unservedError } from './served.js';
import { logSkippedRuns } from './recover-skips.js';
import { RunEventHub } from './events-log.js';
import { stoppableWatch, type WatchOptions, type WatchSource } from './watch.js';
import type { RunEvent } from '../observe/run-events.js';
import { earlyFailure, earlyResult } from './early-result.js';
import { execute } from './executor.js';
import { newId } from './ids.js';
import { runnerParts } from './parts.js';
import { ON_RECORDED, prepareResume, prepareRun, type ParsedInputOptions } from './prepare.js';
import { shownTo, startedWith } from './visibility.js';
import type { RunnerOptions } from './runner-options.js';
import type { DecideResult, InvokeOptions, ResumeOptions, RunDecision, RunOptions } from './types.js';
import type { InvokeResult, RunResult } from '../observe/result.js';
import { checkDecision, decideRun, type ParkedRuns } from './decide.js';
import { cancelRun } from './cancel.js';
import type { SignalResult } from './signal.js';
import { rerunRun, type Rerun, type RerunRefusal } from './rerun.js';
import { releaseStores } from './release-stores.js';

import type { Runner, RunStream } from './runner-api.js';

/** How long `close()` waits for the stores to flush and release, all of them together: under the 5 s it promises. */
const CLOSE_WAIT_MS = 4_500;

/**
 * Creates a runner.
 *
 * @example
 * ```ts
 * const runner = createRunner({
 *   invoker: functionInvoker({ get_weather: async ({ city }) => ({ celsius: 21 }) }),
 *   tools: [getWeather],
 * });
 * const result = await runner.run(chain, { city: 'Oslo' }, { context: { userId } });
 * if (result.status === 'completed') console.log(result.output);
 * await runner.close();
 * ```
 */
export function createRunner<Chains extends Chain[] = Chain[]>(
  options: Omit<RunnerOptions, 'chains'> & { chains?: Chains },
): Runner<Chains> {
  const parts = runnerParts(options);
  // A chain with a tool the invoker cannot run fails here, or before its run's first step: never after a confirmation.
  const served = servedCheck(options.invoker);
  const unservedChains = unservedError(
    served,
    (options.chains ?? []).map((c, i) => [c, `chains[${i}]`] as const),
  );
  if (unservedChains) throw unservedChains;
  const { calls, recorder, events, logger, metrics, timing, learning, breakers } = parts;
  const { now } = calls;
  const runStore = options.stores?.runs;
  // Without a run store nothing is recorded and the run path is the memory path, untouched.
  const durable = runStore
    ? new DurableRuns(parts, runStore, {
        ...(options.leaseMs !== undefined && { leaseMs: options.leaseMs }),
        ...(options.recover && { recover: options.recover }),
        ...(options.retention && { retention: options.retention }),
      })
    : undefined;
  const needsRunStore = (what: string): Error =>
    Object.assign(
      new TypeError(
        `${what} needs durable runs: createRunner({ stores: { runs } }) ` +
          'with memoryRunStore(), redisStores(...) or postgresStores(...).',
      ),
      { code: 'no_run_store' },
    );
  /** The runs a request with `context` is shown (`getRun`, `watch`, `cancel` with `{ context }`). */
  const shownBy =
    (context: object) =>
    (run: StoredRun): boolean =>
      startedWith(parts.chains, run, context);
  const hub = runStore?.events ? new RunEventHub(runStore.events, now, logger) : undefined;
  parts.recorder.runEvents = hub;
  const watchSource = (what: string): WatchSource => {
    if (!runStore || !hub) throw needsRunStore(what);
    return {
      store: runStore,
      log: hub.log,
      hub,
      redacted: (v) => recorder.redacted(v),
      now,
      enlist,
      shownBy,
    };
  };
  let closed = false;
  // The stops of the watches in progress: close() ends them.
  const watches = new Set<AbortController>();
  const enlist = (stop: AbortController): (() => void) => {
    if (closed) stop.abort();
    else watches.add(stop);
    return () => watches.delete(stop);
  };
  const parked = (): ParkedRuns => {
    if (!durable || !runStore) throw needsRunStore('decide()');
    return { parts, durable, store: runStore };
  };

  const closedError = (): Error => new Error('This runner is closed; create a new one with createRunner().');
  const assertOpen = (): void => {
    if (closed) throw closedError();
  };

  const runner: Runner<Chains> = {
    events,

    // Not async: an async wrapper would stay suspended for the whole run, for every run in flight.
    run<O>(chain: Chain<any, any, O>, input: unknown, opts: RunOptions<any> = {}): Promise<RunResult<O>> {
      if (closed) return Promise.reject(closedError());
      let known: boolean;
      try {
        known = isChain(chain);
      } catch {
        known = false; // a Proxy whose traps throw is no chain either
      }
      if (!known) return Promise.reject(new TypeError('Expected a chain made by defineChain().'));
      const unserved = served(chain, 'chain'); // a lookup per run; the error is built only when there is one
      if (unserved) return Promise.reject(new DefinitionError(`run of chain ${chain.name}`, [unserved]));
      let prepared: ReturnType<typeof prepareRun>;
      try {
        prepared = prepareRun(parts, chain, input, opts);
      } catch (error) {
        // A throwing getter or a hostile Proxy in the input or options: a result, never a throw.
        const message =
          `The input or options of chain ${chain.name} could not be read: ` +
          `${error instanceof Error ? error.message : String(error)}`;
        const site = {
          chain: chain.name,
          runId: newId(),
          traceId: newId(),
          sessionId: undefined,
          definition: chain,
          startedAt: now(),
        };
        return Promise.resolve(
          earlyResult<O>(parts, site, earlyFailure(calls, 'invalid_input', 'unreadable_input', message)),
        );
      }
      if ('status' in prepared) return Promise.resolve(prepared as RunResult<O>);
      return durable ? (durable.run(prepared) as Promise<RunResult<O>>) : execute<O>(parts, prepared);
    },

    async resume<O = unknown>(
      token: string,
      decision: { approved: boolean },
      opts: ResumeOptions = {},
    ): Promise<RunResult<O>> {
      assertOpen();
      if (typeof decision?.approved !== 'boolean') throw new TypeError('Expected a decision { approved: boolean }.');
      // Before the checkpoint is taken: the token stays good for a runner that can continue the run.
      const given: readonly Chain[] =
        opts.chain === undefined
          ? []
          : Array.isArray(opts.chain)
            ? (opts.chain as readonly Chain[])
            : [opts.chain as Chain];
      const unserved = unservedError(
        served,
        given.filter((c) => isChain(c)).map((c) => [c, 'chain'] as const),
        'resume',
      );
      if (unserved) throw unserved;
      const prepared = await prepareResume(parts, token, { approved: decision.approved }, opts);
      // A declined gate ends the run: the run store records it (it would stay parked otherwise).
      if ('status' in prepared)
        return (prepared.status === 'declined' && durable ? durable.endParked(prepared) : prepared) as
          Promise<RunResult<O>> | RunResult<O>;
      return durable ? (durable.resume(prepared) as Promise<RunResult<O>>) : execute<O>(parts, prepared);
    },

    invoke<O = unknown>(name: string, input: unknown, opts: InvokeOptions = {}): Promise<InvokeResult<O>> {
      assertOpen();
      return callByName<O>(parts, name, input, opts);
    },

    metrics,
    timing,
    ready: learning ? learning.ready : Promise.resolve(),

    suggest(tool, { sessionId, goal } = {}) {
      return {
        nextTools: nextTools(recorder.guidance, tool),
        relevantChains: relevantChains(recorder.guidance, sessionId ? recorder.sessionTools(sessionId) : [], goal),
      };
    },

    async toolsFor(registry, level) {
      const offered = registry.forComplexity(level);
      const open = await Promise.all(offered.map((t) => breakers.isOpen(t.name, now())));
      return offered.filter((_, i) => !open[i]);
    },

    async recover(): Promise<RunResult[]> {
      assertOpen();
      if (!durable) throw needsRunStore('recover()');
      const results = await durable.recover();
      // Why the runs in flight it did not take stayed where they are: a debug line each (docs/guides/durable-runs.md).
      if (logger && runStore)
        await logSkippedRuns(logger, runStore, parts.chains, new Set(results.map((r) => r.runId)), now);
      return results;
    },

    async getRun(runId: string, getOptions: { context?: object } = {}): Promise<RunInfo | undefined> {
      if (!durable) throw needsRunStore('getRun()');
      const context = shownTo(getOptions);
      return durable.info(runId, context && shownBy(context));
    },

    watch(runId: string, watchOptions: WatchOptions = {}): AsyncIterable<RunEvent> {
      const source = watchSource('watch()');
      // An id that is no run id fails the watch when it is read: a handler has sent its headers by then.
      return { [Symbol.asyncIterator]: () => stoppableWatch(source, runId, watchOptions) };
    },

    stream<O>(chain: Chain<any, any, O>, input: unknown, opts: RunOptions<any> = {}): RunStream<O> {
      const source = watchSource('stream()');
      const runId = opts.runId ?? newId();
      // Watched once the store took the id as this caller's run: its events go to the log as they happen, not at its
      // end. Another's run under that id is never marked watched here; an id that is no run id neither (it may be
      // shaped like an announce: a cancel).
      let unwatch: (() => void) | undefined;
      const over = new AbortController();
      let settled: RunResult | undefined;
      let failure: { error: unknown } | undefined;
      let resolveOurs!: (ours: boolean | 'joined') => void;
      // Whether the run id is this caller's run: another's (`run_id_taken`) is never read, only this run's refusal.
      const ours = new Promise<boolean | 'joined'>((resolve) => (resolveOurs = resolve));
      const recorded = (mine: boolean | 'joined'): void => {
        // Called as the store answers, before the run's first event: its writer starts out watched.
        if (mine && !unwatch && !over.signal.aborted) unwatch = source.hub.watch(runId);
        resolveOurs(mine);
      };
      const runOptions: ParsedInputOptions<unknown> = { ...opts, runId, [ON_RECORDED]: recorded };
      const result = runner.run(chain, input as never, runOptions as never) as Promise<RunResult<O>>;
      result
        .then(
          (r) => (settled = r),
          (error: unknown) => (failure = { error }),
        )
        .finally(() => {
          resolveOurs(false); // settled before the store was asked (its input refused): nothing of it is in the log
          unwatch?.();
          over.abort();
        });
      const ended = {
        signal: over.signal,
        ours,
        result(): RunResult | undefined {
          if (failure) throw failure.error;
          return settled;
        },
      };
      return { runId, result, events: { [Symbol.asyncIterator]: () => stoppableWatch(source, runId, {}, ended) } };
    },

    async cancel(
      runId: string,
      cancelOptions: { reason?: string; context?: object } = {},
    ): Promise<'cancelled' | 'not_found' | 'ended'> {
      const { store, log } = watchSource('cancel()');
      const context = shownTo(cancelOptions);
      return cancelRun({ store, log, durable, parked, now }, runId, cancelOptions, context && shownBy(context));
    },

    async decide<O = unknown>(runId: string, decision: RunDecision): Promise<DecideResult<O>> {
      assertOpen();
      checkDecision(runId, decision);
      return decideRun(parked(), runId, decision) as Promise<DecideResult<O>>;
    },

    async signal<O = unknown>(
      runId: string,
      name: string,
      payload: unknown,
      signalOptions: { context?: object } = {},
    ): Promise<SignalResult<O>> {
      assertOpen();
      if (!durable) throw needsRunStore('signal()');
      const context = shownTo(signalOptions);
      return durable.signal(runId, name, payload, context && shownBy(context)) as Promise<SignalResult<O>>;
    },

    async listRuns(filter: ListRunsFilter = {}): Promise<RunPage> {
      if (!runStore) throw needsRunStore('listRuns()');
      return listRuns({ store: runStore, chains: parts.chains, redact: options.redact, now }, filter);
    },

    async rerun(runId: string): Promise<Rerun | RerunRefusal> {
      assertOpen();
      if (!durable || !runStore) throw needsRunStore('rerun()');
      return rerunRun({ parts, durable, store: runStore }, runId);
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      for (const stop of watches) stop.abort();
      watches.clear();
      hub?.shutdown();
      const closeBy = now() + CLOSE_WAIT_MS;
      // Before the aborts: the runs cut off stay recorded as in flight, for another instance to recover.
      durable?.close();
      const reason = new RunAbortReason('closed', 'The runner was closed.');
      for (const c of calls.active) c.abort(reason);
      calls.active.clear();
      recorder.transitions.clear();
      await releaseStores(parts, closeBy);
      events.removeAllListeners();
    },

    [Symbol.asyncDispose](): Promise<void> {
      return runner.close();
    },
  };
  return runner;
}
