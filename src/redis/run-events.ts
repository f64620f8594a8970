// Run events on Redis (docs/guides/watching-runs.md): one stream per run, `<prefix>:run-e:<id>`, whose
// entry ids are `0-<seq>` (XADD `0-*` numbers them, strictly increasing, in the append's script), trimmed
// to the newest `maxEventsPerRun`. Each append publishes its last seq on the run's channel (the stream's
// name without a client's `keyPrefix`); readers wait on one subscriber connection per log (a blocking read
// per reader would hold a connection each: a few thousand watchers would reach Redis's client limit).
// Announces travel on one channel per prefix.
import type { RunEvent } from '../observe/run-events.js';
import { storeFailure, StoreFailure } from '../stores/guard.js';
import { decodeCheckpoint } from '../stores/serialize.js';
import type { RunEventLog } from '../stores/run-event-log.js';
import type { RedisClient } from './client.js';
import { checkOptions, integer, nonEmpty } from '../define/options.js';
import { z } from 'zod';

// KEYS: the run's stream. ARGV: its channel (in ARGV: ioredis prefixes keys, not channels), keepMs (''
// while the run is in flight), max events kept, events… Returns the last seq (0 for an empty log).
const APPEND = `
for i = 4, #ARGV do redis.call('XADD', KEYS[1], '0-*', 'e', ARGV[i]) end
if #ARGV >= 4 then redis.call('XTRIM', KEYS[1], 'MAXLEN', ARGV[3]) end
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
if not last then return 0 end
if ARGV[2] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[2]) else redis.call('PERSIST', KEYS[1]) end
local seq = string.match(last[1], '-(%d+)$')
if #ARGV >= 4 then redis.call('PUBLISH', ARGV[1], seq) end
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
  on(event: 'ready' | 'end', listener: () => void): unknown;
  connect(): Promise<void>;
  disconnect(): void;
}

/** A reader waiting for events after `after`. */
interface Reader {
  after: number;
  wake: () => void;
}

/** A run whose channel is subscribed (once `subscribed` settles), and its waiting readers. */
interface Watched {
  /** The run's stream key. */
  stream: string;
  readers: Set<Reader>;
  subscribed: Promise<void>;
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
  // Channels carry the client's keyPrefix by hand (ioredis prefixes keys only): two namespaces sharing one Redis and
  // one chainkit prefix must not hear each other's announces (a cancel is one) nor wake each other's readers.
  const space = (redis as { options?: { keyPrefix?: unknown } }).options?.keyPrefix;
  const ns = typeof space === 'string' ? space : space instanceof Uint8Array ? Buffer.from(space).toString() : '';
  const channelOf = (runId: string): string => ns + key(runId);
  const announceChannel = `${ns}${p}:runs:announce`;
  const listeners = new Set<(runId: string) => void>();
  const watched = new Map<string, Watched>(); // by channel
  let subscriber: Promise<Subscriber> | undefined;
  let connection: Subscriber | undefined;
  let sweeper: ReturnType<typeof setInterval> | undefined;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let hearing = false; // an announce subscription in flight
  let epoch = 0; // each subscriber's: what an older one settles late is ignored

  const guard = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (error) {
      throw error instanceof StoreFailure ? error : storeFailure(`run (${what})`, error);
    }
  };
  const later = (ms: number, fn: () => void): void => void setTimeout(fn, ms).unref?.();
  /** Forgets a run's channel, and unsubscribes it (ioredis would subscribe it again after each reconnect). */
  const drop = (channel: string): void => {
    watched.delete(channel);
    connection?.unsubscribe(channel).catch(() => undefined);
  };

  // Read once subscribed: an append before the subscription is in the read, one after it is published. Read per
  // wait, never remembered: a log can be gone and begin again at seq 1 (its retention passed), and a remembered
  // seq would wake its readers at once, forever.
  const check = (channel: string, w: Watched, readers: Iterable<Reader>): Promise<void> =>
    w.subscribed
      .then(() => redis.eval(LAST, 1, w.stream))
      .then(
        (last) => {
          for (const reader of readers) if (reader.after < Number(last)) reader.wake();
        },
        () => {
          // Redis away: forgotten, so the next wait subscribes again; its readers read again after a pause.
          if (watched.get(channel) === w) drop(channel);
          later(100, () => wakeAll(w));
        },
      );
  const wakeAll = (w: Watched): void => {
    for (const reader of w.readers) reader.wake();
  };

  const sweep = (): void => {
    const cutoff = Date.now() - IDLE_MS;
    for (const [channel, w] of watched) if (w.readers.size === 0 && w.idleSince <= cutoff) drop(channel);
    if (watched.size === 0 && sweeper) {
      clearInterval(sweeper);
      sweeper = undefined;
    }
  };

  // The announce subscription, while anyone listens: again on a new subscriber, retried while Redis is away.
  const hearAnnounces = (): void => {
    if (listeners.size === 0 || hearing || retry) return;
    hearing = true;
    const at = epoch;
    subscribed()
      .then((conn) => conn.subscribe(announceChannel))
      .then(
        () => {
          if (at === epoch) hearing = false;
        },
        () => {
          if (at !== epoch) return; // closed or replaced meanwhile: that one hears them
          hearing = false;
          retry = setTimeout(() => {
            retry = undefined;
            hearAnnounces();
          }, 1_000);
          retry.unref?.();
        },
      );
  };
  /** Forgets the subscriber (gone, or closed): its readers read again, and a new one is opened when needed. */
  const forget = (): void => {
    subscriber = connection = undefined;
    epoch++;
    hearing = false;
    if (retry) clearTimeout(retry);
    retry = undefined;
    const readers = [...watched.values()];
    watched.clear();
    for (const w of readers) wakeAll(w);
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
      if (w) for (const reader of w.readers) if (reader.after < Number(message)) reader.wake();
    });
    const at = epoch;
    const ready = conn.connect().then(() => {
      // Back after a break (ioredis subscribes again): what was published meanwhile is lost, so each run is read again.
      conn.on('ready', () => {
        for (const [channel, w] of watched) {
          w.subscribed = conn.subscribe(channel).then(() => undefined);
          void check(channel, w, [...w.readers]);
        }
      });
      // Gone for good (ioredis gave up reconnecting): the next reader opens another; the readers now read again.
      conn.on('end', () => {
        if (at !== epoch) return; // closed: close() saw to it
        forget();
        hearAnnounces();
      });
      return conn;
    });
    subscriber = ready;
    connection = conn;
    ready.catch(() => {
      if (subscriber === ready) subscriber = connection = undefined; // the next reader tries again
      conn.disconnect();
    });
    return ready;
  };

  return {
    append: (runId, events, keepMs) =>
      guard('events', async () =>
        Number(
          await redis.eval(
            APPEND,
            1,
            key(runId),
            channelOf(runId),
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
        return new Promise<void>((resolve) => later(Math.min(timeoutMs, 100), resolve));
      }
      if (signal?.aborted || conn !== connection) return; // closed or gone meanwhile
      const channel = channelOf(runId);
      let w = watched.get(channel);
      if (!w) {
        const subscribing = conn.subscribe(channel).then(() => undefined);
        w = { stream: key(runId), readers: new Set(), subscribed: subscribing, idleSince: 0 };
        watched.set(channel, w);
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
        void check(channel, held, [reader]);
      });
    },

    announce: (runId) =>
      guard('events', async () => {
        await redis.eval(ANNOUNCE, 0, announceChannel, runId);
      }),

    onAnnounce(listener) {
      listeners.add(listener);
      hearAnnounces();
      return () => listeners.delete(listener);
    },

    async close() {
      const conn = connection;
      if (sweeper) clearInterval(sweeper);
      sweeper = undefined;
      forget();
      conn?.disconnect(); // connected or still connecting: not waited for (a partition could take its timeout)
      // A store shared by another runner: the announces it still listens for are heard on a new connection.
      hearAnnounces();
    },
  };
}
