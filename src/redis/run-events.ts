// Run events on Redis (docs/guides/watching-runs.md): one stream per run, `<prefix>:run-e:<id>`, whose
// entry ids are `0-<seq>` (XADD `0-*` numbers them, strictly increasing, in the append's script), trimmed
// to the newest `maxEventsPerRun`. Readers wait with a blocking XREAD on connections of their own;
// announces travel on one pub/sub channel per prefix.
import type { RunEvent } from '../observe/run-events.js';
import { storeFailure, StoreFailure } from '../stores/guard.js';
import { decodeCheckpoint } from '../stores/serialize.js';
import type { RunEventLog } from '../stores/run-event-log.js';
import type { RedisClient } from './client.js';
import { checkOptions, integer, nonEmpty } from '../define/options.js';
import { z } from 'zod';

// KEYS: the run's stream. ARGV: keepMs ('' while the run is in flight), max events kept, events…
// Returns the last seq (0 for an empty log).
const APPEND = `
for i = 3, #ARGV do redis.call('XADD', KEYS[1], '0-*', 'e', ARGV[i]) end
if #ARGV >= 3 then redis.call('XTRIM', KEYS[1], 'MAXLEN', ARGV[2]) end
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
if not last then return 0 end
if ARGV[1] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[1]) else redis.call('PERSIST', KEYS[1]) end
return tonumber(string.match(last[1], '-(%d+)$'))`;

// KEYS: the run's stream. ARGV: first id (exclusive), count.
const READ = `return redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+', 'COUNT', ARGV[2])`;

// KEYS: none. ARGV: channel, run id.
const ANNOUNCE = `return redis.call('PUBLISH', ARGV[1], ARGV[2])`;

/** A connection of its own, for blocking reads and the announce subscription (what chainkit calls of it). */
interface OwnConnection {
  xread(...args: (string | number)[]): Promise<unknown>;
  subscribe(channel: string): Promise<unknown>;
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  on(event: 'error', listener: (error: unknown) => void): unknown;
  connect(): Promise<void>;
  disconnect(): void;
}

/** Options of {@link redisEventLog}. */
export interface RedisEventLogOptions {
  /** The key namespace (the run store's). */
  prefix: string;
  /** Events kept per run (the stream is trimmed to the newest). Default 10 000. */
  maxEventsPerRun?: number;
}

const decode = decodeCheckpoint as (text: string) => unknown;

const REDIS_EVENT_LOG_OPTIONS = z.object(
  { prefix: nonEmpty('prefix'), maxEventsPerRun: integer('maxEventsPerRun', 1).optional() },
  { error: 'Expected redisEventLog options { prefix, … }.' },
);

/**
 * The event log of the Redis run store (`redisStores(…).runs.events`).
 *
 * @example
 * ```ts
 * const events = redisEventLog(redis, { prefix: 'myapp' });
 * for (const e of await events.read(runId, 0, 100)) console.log(e.seq, e.type);
 * ```
 */
export function redisEventLog(
  redis: RedisClient,
  options: RedisEventLogOptions,
): RunEventLog & { close(): Promise<void> } {
  checkOptions('redisEventLog options', REDIS_EVENT_LOG_OPTIONS, options);
  const p = options.prefix;
  const cap = options.maxEventsPerRun ?? 10_000;
  const key = (runId: string): string => `${p}:run-e:${runId}`;
  const channel = `${p}:runs:announce`;
  const listeners = new Set<(runId: string) => void>();
  const idle: OwnConnection[] = []; // blocking-read connections between reads
  const open = new Set<OwnConnection>();
  let subscriber: Promise<OwnConnection> | undefined;
  let closed = false;

  const own = async (): Promise<OwnConnection> => {
    const conn = redis.duplicate({ lazyConnect: true }) as OwnConnection;
    conn.on('error', () => undefined); // reported by the command that fails
    open.add(conn);
    await conn.connect();
    return conn;
  };
  const drop = (conn: OwnConnection): void => {
    open.delete(conn);
    conn.disconnect();
  };
  const guard = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (error) {
      throw error instanceof StoreFailure ? error : storeFailure(`run (${what})`, error);
    }
  };

  return {
    append: (runId, events, keepMs) =>
      guard('events', async () =>
        Number(
          await redis.eval(
            APPEND,
            1,
            key(runId),
            keepMs === undefined ? '' : Math.max(1, Math.ceil(keepMs)),
            cap,
            ...events,
          ),
        ),
      ),

    read: (runId, after, limit) =>
      guard('events', async () => {
        const rows = (await redis.eval(READ, 1, key(runId), `0-${after}`, Math.max(1, Math.floor(limit)))) as [
          string,
          string[],
        ][];
        return rows.map(
          ([id, fields]) =>
            ({ seq: Number(id.slice(id.indexOf('-') + 1)), runId, ...(decode(fields[1]!) as object) }) as RunEvent,
        );
      }),

    async wait(runId, after, timeoutMs, signal) {
      if (closed || signal?.aborted) return;
      let conn: OwnConnection;
      try {
        conn = idle.pop() ?? (await own());
      } catch {
        // Redis away: the reader tries again.
        return new Promise<void>((resolve) => setTimeout(resolve, Math.min(timeoutMs, 100)).unref?.());
      }
      if (signal?.aborted) {
        idle.push(conn);
        return;
      }
      // A blocking read cannot be taken back: an abort hands the reader back at once and drops the connection.
      let aborted = false;
      const onAbort = (): void => {
        aborted = true;
        drop(conn);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        await conn.xread('BLOCK', Math.max(1, Math.ceil(timeoutMs)), 'COUNT', 1, 'STREAMS', key(runId), `0-${after}`);
      } catch {
        if (!aborted) drop(conn);
        return;
      } finally {
        signal?.removeEventListener('abort', onAbort);
      }
      if (aborted) return;
      if (closed || idle.length >= 4) drop(conn);
      else idle.push(conn);
    },

    announce: (runId) =>
      guard('events', async () => {
        await redis.eval(ANNOUNCE, 0, channel, runId);
      }),

    onAnnounce(listener) {
      listeners.add(listener);
      if (!subscriber && !closed) {
        subscriber = own().then(async (conn) => {
          conn.on('message', (_channel, runId) => {
            for (const l of listeners) l(runId);
          });
          await conn.subscribe(channel);
          return conn;
        });
        subscriber.catch(() => (subscriber = undefined)); // a later listener tries again
      }
      return () => listeners.delete(listener);
    },

    async close() {
      closed = true;
      const sub = subscriber;
      subscriber = undefined;
      if (sub) await sub.then(drop, () => undefined);
      for (const conn of [...open]) drop(conn);
      idle.length = 0;
      closed = false; // a store shared by another runner opens connections again when it needs them
    },
  };
}
