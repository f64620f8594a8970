// Run events on Redis (docs/guides/watching-runs.md): one stream per run, `<prefix>:run-e:<id>`, whose
// entry ids are `0-<seq>` (XADD `0-*` numbers them, strictly increasing, in the append's script), trimmed
// to the newest `maxEventsPerRun`. Each append publishes its last seq on the channel named as the stream;
// readers wait on one subscriber connection per log (a blocking read per reader would hold a connection
// each: a few thousand watchers would reach Redis's client limit). Announces travel on one channel per prefix.
import type { RunEvent } from '../observe/run-events.js';
import { storeFailure, StoreFailure } from '../stores/guard.js';
import { decodeCheckpoint } from '../stores/serialize.js';
import type { RunEventLog } from '../stores/run-event-log.js';
import type { RedisClient } from './client.js';
import { checkOptions, integer, nonEmpty } from '../define/options.js';
import { z } from 'zod';

// KEYS: the run's stream (also the channel its appends are published on). ARGV: keepMs ('' while the run
// is in flight), max events kept, events… Returns the last seq (0 for an empty log).
const APPEND = `
for i = 3, #ARGV do redis.call('XADD', KEYS[1], '0-*', 'e', ARGV[i]) end
if #ARGV >= 3 then redis.call('XTRIM', KEYS[1], 'MAXLEN', ARGV[2]) end
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
if not last then return 0 end
if ARGV[1] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[1]) else redis.call('PERSIST', KEYS[1]) end
local seq = string.match(last[1], '-(%d+)$')
if #ARGV >= 3 then redis.call('PUBLISH', KEYS[1], seq) end
return tonumber(seq)`;

// KEYS: the run's stream. Returns its last seq (0 for an empty log).
const LAST = `
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
if not last then return 0 end
return tonumber(string.match(last[1], '-(%d+)$'))`;

// KEYS: the run's stream. ARGV: first id (exclusive), count.
const READ = `return redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+', 'COUNT', ARGV[2])`;

// KEYS: none. ARGV: channel, run id.
const ANNOUNCE = `return redis.call('PUBLISH', ARGV[1], ARGV[2])`;

/** How long a run's channel stays subscribed after its last reader stopped waiting (a watch waits again soon). */
const IDLE_MS = 2_000;

/** The subscriber connection of a log (what chainkit calls of it). */
interface Subscriber {
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  on(event: 'error', listener: (error: unknown) => void): unknown;
  on(event: 'ready', listener: () => void): unknown;
  connect(): Promise<void>;
  disconnect(): void;
}

/** A run whose channel is subscribed: its waiting readers, and its last seq as far as this log knows. */
interface Watched {
  readers: Set<{ after: number; wake: () => void }>;
  /** Known once `synced` settles: the last seq read after subscribing, then each published one. */
  seq: number;
  synced: Promise<void>;
  idleSince: number;
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
  const announceChannel = `${p}:runs:announce`;
  const listeners = new Set<(runId: string) => void>();
  const watched = new Map<string, Watched>(); // by channel (the run's stream key)
  let subscriber: Promise<Subscriber> | undefined;
  let connection: Subscriber | undefined;
  let sweeper: ReturnType<typeof setInterval> | undefined;

  const guard = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (error) {
      throw error instanceof StoreFailure ? error : storeFailure(`run (${what})`, error);
    }
  };

  const wakeAfter = (w: Watched): void => {
    for (const reader of w.readers) if (reader.after < w.seq) reader.wake();
  };
  // Subscribed first, then read: an append before the subscription is in the read, one after it is published.
  const sync = (conn: Subscriber, channel: string, w: Watched): Promise<void> =>
    conn
      .subscribe(channel)
      .then(() => redis.eval(LAST, 1, channel))
      .then((last) => {
        w.seq = Math.max(w.seq, Number(last));
        wakeAfter(w);
      });

  const sweep = (): void => {
    const cutoff = Date.now() - IDLE_MS;
    for (const [channel, w] of watched)
      if (w.readers.size === 0 && w.idleSince <= cutoff) {
        watched.delete(channel);
        connection?.unsubscribe(channel).catch(() => undefined);
      }
    if (watched.size === 0 && sweeper) {
      clearInterval(sweeper);
      sweeper = undefined;
    }
  };

  const subscribed = (): Promise<Subscriber> => {
    if (subscriber) return subscriber;
    const conn = redis.duplicate({ lazyConnect: true }) as Subscriber;
    conn.on('error', () => undefined); // reported by the command that fails
    conn.on('message', (channel, message) => {
      if (channel === announceChannel) {
        for (const l of listeners) l(message);
        return;
      }
      const w = watched.get(channel);
      if (!w) return;
      w.seq = Number(message); // the newest append's: lower than before only when the log was gone and began again
      wakeAfter(w);
    });
    connection = conn;
    const ready = conn.connect().then(() => {
      // Back after a break (ioredis subscribes again): what was published meanwhile is lost, so each run is read again.
      conn.on('ready', () => {
        for (const [channel, w] of watched) w.synced = sync(conn, channel, w).catch(() => wakeAll(w));
      });
      return conn;
    });
    subscriber = ready;
    ready.catch(() => {
      if (subscriber === ready) subscriber = connection = undefined; // the next reader tries again
      conn.disconnect();
    });
    return ready;
  };
  const wakeAll = (w: Watched): void => {
    for (const reader of w.readers) reader.wake();
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
      if (signal?.aborted) return;
      let conn: Subscriber;
      try {
        conn = await subscribed();
      } catch {
        // Redis away: the reader tries again.
        return new Promise<void>((resolve) => setTimeout(resolve, Math.min(timeoutMs, 100)).unref?.());
      }
      if (signal?.aborted || conn !== connection) return; // closed meanwhile
      const channel = key(runId);
      let w = watched.get(channel);
      if (!w) {
        const fresh: Watched = { readers: new Set(), seq: 0, synced: Promise.resolve(), idleSince: 0 };
        fresh.synced = sync(conn, channel, fresh).catch(() => {
          // Not subscribed: forgotten, so the next wait subscribes again (after a pause: no loop on a failing server).
          if (watched.get(channel) === fresh) watched.delete(channel);
          setTimeout(() => wakeAll(fresh), Math.min(timeoutMs, 100)).unref?.();
        });
        watched.set(channel, (w = fresh));
        if (!sweeper) {
          sweeper = setInterval(sweep, IDLE_MS);
          sweeper.unref?.();
        }
      }
      const held = w;
      await new Promise<void>((resolve) => {
        const reader = {
          after,
          wake: (): void => {
            clearTimeout(timer);
            signal?.removeEventListener('abort', reader.wake);
            if (held.readers.delete(reader) && held.readers.size === 0) held.idleSince = Date.now();
            resolve();
          },
        };
        const timer = setTimeout(reader.wake, timeoutMs);
        signal?.addEventListener('abort', reader.wake, { once: true });
        held.readers.add(reader);
        // Synced already: the seq is current (an append since is on its way as a message).
        void held.synced.then(() => {
          if (held.seq > after) reader.wake();
        });
      });
    },

    announce: (runId) =>
      guard('events', async () => {
        await redis.eval(ANNOUNCE, 0, announceChannel, runId);
      }),

    onAnnounce(listener) {
      listeners.add(listener);
      subscribed()
        .then((conn) => conn.subscribe(announceChannel))
        .catch(() => undefined); // a later listener tries again
      return () => listeners.delete(listener);
    },

    async close() {
      const conn = subscriber;
      subscriber = connection = undefined;
      if (sweeper) clearInterval(sweeper);
      sweeper = undefined;
      const readers = [...watched.values()];
      watched.clear();
      for (const w of readers) wakeAll(w);
      // A store shared by another runner opens a connection again when it needs one.
      if (conn)
        await conn.then(
          (c) => c.disconnect(),
          () => undefined,
        );
    },
  };
}
