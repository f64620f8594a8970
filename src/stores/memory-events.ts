// The event log of the memory run store: a ring buffer per run (the oldest events go first), waiters
// woken on append, and ended runs' logs dropped when their retention ends — nothing grows unbounded.
import type { RunEvent } from '../observe/run-events.js';
import { decodeCheckpoint } from './serialize.js';
import { checkOptions, integer } from '../define/options.js';
import { z } from 'zod';
import type { RunEventLog } from './run-event-log.js';

/** Options of {@link memoryEventLog}. */
export interface MemoryEventLogOptions {
  /** Events kept per run; past it the oldest go, and a reader that far behind is cut off. Default 10 000. */
  maxEventsPerRun?: number;
  /** Logs of ended runs kept at most; the oldest go first. Default 10 000. */
  maxEnded?: number;
  /** Clock for retention. Default `Date.now`. */
  now?: () => number;
}

interface Log {
  /** Encoded events; `ring[(first + i) % ring.length]` has seq `firstSeq + i`. */
  ring: string[];
  first: number;
  size: number;
  /** The seq of the oldest event kept. */
  firstSeq: number;
  expiresAt: number;
  waiters: Set<() => void>;
}

const decode = decodeCheckpoint as (text: string) => unknown;

const EVENT_LOG_OPTIONS = z.object(
  { maxEventsPerRun: integer('maxEventsPerRun', 1).optional(), maxEnded: integer('maxEnded', 1).optional() },
  { error: 'Expected memoryEventLog options to be an object.' },
);

/**
 * An event log in memory, for `memoryRunStore()`: one process, appends answered at once.
 *
 * @example
 * ```ts
 * const events = memoryEventLog({ maxEventsPerRun: 1000 });
 * await events.append(runId, [
 *   encodeRunValue({ at: Date.now(), type: 'run:start', data: { chain: 'c', resumed: false } }),
 * ]);
 * ```
 */
export function memoryEventLog(options: MemoryEventLogOptions = {}): RunEventLog {
  const cap = options.maxEventsPerRun ?? 10_000;
  checkOptions('memoryEventLog options', EVENT_LOG_OPTIONS, options);
  const maxEnded = options.maxEnded ?? 10_000;
  const now = options.now ?? Date.now;
  const logs = new Map<string, Log>();
  const ended = new Map<string, true>(); // runs whose logs have a retention, in the order they got it
  // Logs made for a watch of a run not seen yet, oldest first: capped apart, so that watches of made-up
  // ids never push the logs of real runs out of `ended`.
  const placeholders = new Map<string, true>();
  const listeners = new Set<(runId: string) => void>();

  const live = (runId: string): Log | undefined => {
    const log = logs.get(runId);
    if (log && log.expiresAt <= now()) {
      logs.delete(runId);
      ended.delete(runId);
      placeholders.delete(runId);
      return undefined;
    }
    return log;
  };
  // Retentions are usually equal, so retention order is expiry
  // order: drop expired ones from the front, then the excess.
  const trim = (): void => {
    const t = now();
    for (const id of ended.keys()) {
      const log = logs.get(id);
      if (log && log.expiresAt > t && ended.size <= maxEnded) break;
      ended.delete(id);
      if (log && log.expiresAt !== Infinity) logs.delete(id);
    }
  };

  // Past the cap the oldest placeholder goes, its waiters woken (they look again, and wait anew).
  const trimPlaceholders = (): void => {
    for (const id of placeholders.keys()) {
      if (placeholders.size <= maxEnded) break;
      placeholders.delete(id);
      const log = logs.get(id);
      if (!log || log.size > 0 || log.expiresAt === Infinity) continue;
      logs.delete(id);
      for (const wake of [...log.waiters]) wake();
    }
  };

  return {
    local: true,
    async append(runId, events, keepMs) {
      placeholders.delete(runId); // the run has appended: its log is a log
      let log = live(runId);
      if (!log)
        logs.set(runId, (log = { ring: [], first: 0, size: 0, firstSeq: 1, expiresAt: Infinity, waiters: new Set() }));
      for (const e of events) {
        if (log.size < cap) {
          log.ring.push(e);
          log.size++;
        } else {
          log.ring[log.first] = e; // the oldest goes
          log.first = (log.first + 1) % cap;
          log.firstSeq++;
        }
      }
      if (keepMs !== undefined) {
        log.expiresAt = now() + keepMs;
        ended.delete(runId);
        ended.set(runId, true);
        trim();
      } else if (log.expiresAt !== Infinity) {
        log.expiresAt = Infinity; // resumed: in flight again
        ended.delete(runId);
      }
      if (events.length > 0 && log.waiters.size > 0) {
        const woken = [...log.waiters];
        log.waiters.clear();
        for (const wake of woken) wake();
      }
      return log.firstSeq + log.size - 1;
    },
    async read(runId, after, limit) {
      const log = live(runId);
      if (!log) return [];
      const out: RunEvent[] = [];
      const from = Math.max(after + 1, log.firstSeq);
      const last = log.firstSeq + log.size - 1;
      for (let seq = from; seq <= last && out.length < limit; seq++) {
        const text = log.ring[(log.first + (seq - log.firstSeq)) % log.ring.length]!;
        out.push({ seq, runId, ...(decode(text) as object) } as RunEvent);
      }
      return out;
    },
    wait(runId, after, timeoutMs, signal) {
      const log = live(runId);
      if (log && log.firstSeq + log.size - 1 > after) return Promise.resolve();
      if (signal?.aborted) return Promise.resolve();
      return new Promise<void>((resolve) => {
        let target = log;
        if (!target) {
          // Nothing yet (a watch that starts before its run): a placeholder that expires unless the run appends.
          logs.set(
            runId,
            (target = {
              ring: [],
              first: 0,
              size: 0,
              firstSeq: 1,
              expiresAt: now() + timeoutMs + 1,
              waiters: new Set(),
            }),
          );
          placeholders.set(runId, true);
          trimPlaceholders();
        }
        const held = target;
        const done = (): void => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', done);
          held.waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, timeoutMs);
        signal?.addEventListener('abort', done, { once: true });
        held.waiters.add(done);
      });
    },
    async announce(runId) {
      for (const listener of listeners) listener(runId);
    },
    onAnnounce(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
