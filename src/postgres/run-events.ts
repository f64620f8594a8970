// Run events on PostgreSQL (docs/guides/watching-runs.md): table `run_events` (run, seq, event) and
// one row per run in `run_event_logs` holding its last seq and retention. An append is one statement:
// the counter row bumped (it serializes appends of one run), the events inserted, the oldest beyond
// `maxEventsPerRun` deleted, and a NOTIFY that wakes readers; readers LISTEN on a connection of their own.
import { createHash } from 'node:crypto';
import type { RunEvent } from '../observe/run-events.js';
import { storeFailure } from '../stores/guard.js';
import { decodeCheckpoint } from '../stores/serialize.js';
import type { LastEvents, RunEventLog } from '../stores/run-event-log.js';
import { textList, textRows, type Db, type Statement } from './db.js';
import { checkOptions, integer } from '../define/options.js';
import { z } from 'zod';

/** Options of the Postgres event log. */
export interface PostgresEventLogOptions {
  /** Events kept per run (the oldest deleted as new ones come). Default 10 000. */
  maxEventsPerRun?: number;
  /** At most one sweep of expired logs this often (ms; the stores' `sweepIntervalMs`). Default a minute. */
  sweepEveryMs?: number;
}

/** Expired logs deleted per sweep; at most one sweep a minute, in the background of an append. */
const SWEEP_BATCH = 1000;
const SWEEP_EVERY_MS = 60_000;

const decode = decodeCheckpoint as (text: string) => unknown;

/** A connection of its own for LISTEN (never one of the pool's: a pool of one would be starved). */
interface Listener {
  connect(): Promise<void>;
  query(text: string): Promise<unknown>;
  on(event: 'notification', listener: (n: { channel: string; payload?: string }) => void): unknown;
  on(event: 'error', listener: (error: unknown) => void): unknown;
  end(): Promise<void>;
  /** pg's socket: destroyed when a polite end gets no answer (a partition). */
  connection?: { stream?: { destroy(): void } };
}

/** How long `close()` waits for the LISTEN connection to end politely before cutting its socket. */
const LISTEN_END_WAIT_MS = 1_000;

/**
 * Ends the LISTEN connection (connected, or still connecting): a server that does not answer in time
 * (a partition) gets its socket cut, so `close()` returns and no handle stays open.
 */
async function endListener(client: Listener, connected: Promise<Listener>): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(resolve, LISTEN_END_WAIT_MS, false)));
  const polite = connected
    .then((c) => c.end())
    .then(
      () => true,
      () => true,
    );
  const ended = await Promise.race([polite, late]);
  clearTimeout(timer);
  if (!ended) client.connection?.stream?.destroy();
}

/**
 * The common table expressions of an append (`c`: the log's counter row and the seq before the first
 * event, measured once: a json parameter is re-read by each call, `i`, `d`, `n`: the NOTIFY), `$1` the
 * run id and `$p` … `$p+5` the events, their expiry, now, the cap, the channel and whether to wake readers
 * (a NOTIFY serializes commits: skipped at the end of a run nobody watches). With `from`, they append only
 * when that expression yields a row: a run's end and its last events in one statement.
 */
function appendCtes(s: string, from: string | undefined, p: number): string {
  const [events, expires, now, cap, channel, wake] = [p, p + 1, p + 2, p + 3, p + 4, p + 5].map((n) => `$${n}`);
  return `c AS (
  INSERT INTO ${s}.run_event_logs AS l (run_id, last, expires_at)
  SELECT $1::text, json_array_length(${events}::json), ${expires}::double precision${from ? ` FROM ${from}` : ''}
  ON CONFLICT (run_id) DO UPDATE SET last = l.last + json_array_length(${events}::json),
    expires_at = EXCLUDED.expires_at
  WHERE l.expires_at IS NULL OR l.expires_at > ${now}
  RETURNING last, last - json_array_length(${events}::json) AS base
),
i AS (INSERT INTO ${s}.run_events (run_id, seq, event)
  SELECT $1, c.base + u.i, u.e
  FROM c, ${textRows(`$${p}`)}),
d AS (DELETE FROM ${s}.run_events WHERE run_id = $1 AND seq <= (SELECT last FROM c) - ${cap}),
n AS (SELECT pg_notify(${channel}, $1) FROM c WHERE json_array_length(${events}::json) > 0 AND ${wake}::boolean)`;
}

/**
 * What the run store needs of the event log to end a run and append its last events in one statement
 * (`finishWithEvents`).
 */
export interface EndWithEvents {
  /** The statement: `ctes` (the end's, `f` yields the ended run's row, using `$1` … `$p-1`), then the append's. */
  statement(ctes: string, p: number): Statement;
  /** The append's values after the end's. */
  values(last: LastEvents, now: number): unknown[];
  /** The log's tables exist. */
  ready(): Promise<void>;
  /** After a log was given a retention: its occasional sweep of expired logs. */
  kept(now: number): void;
}

const POSTGRES_EVENT_LOG_OPTIONS = z.object(
  { maxEventsPerRun: integer('maxEventsPerRun', 1).optional() },
  { error: 'Expected postgresEventLog options to be an object.' },
);

/**
 * The event log of `postgresStores(…).runs.events`: tables created on first use.
 *
 * @example
 * ```ts
 * const events = postgresEventLog(db, { maxEventsPerRun: 10_000 });
 * const page = await events.read(runId, 0, 100);
 * ```
 */
export function postgresEventLog(
  db: Db,
  options: PostgresEventLogOptions = {},
): RunEventLog & { close(): Promise<void>; end: EndWithEvents } {
  const cap = options.maxEventsPerRun ?? 10_000;
  checkOptions('postgresEventLog options', POSTGRES_EVENT_LOG_OPTIONS, options);
  const { s } = db;
  const tag = createHash('sha1').update(db.schema).digest('hex').slice(0, 16);
  const eventsChannel = `ck_ev_${tag}`;
  const announceChannel = `ck_an_${tag}`;
  const ddl = `
SELECT pg_advisory_xact_lock(1667985781, ${createHash('sha1').update(s).digest().readInt32BE(0)});
CREATE TABLE IF NOT EXISTS ${s}.run_event_logs (
  run_id text PRIMARY KEY, last bigint NOT NULL, expires_at double precision);
CREATE INDEX IF NOT EXISTS run_event_logs_expiry ON ${s}.run_event_logs (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS ${s}.run_events (
  run_id text NOT NULL, seq bigint NOT NULL, event text NOT NULL, PRIMARY KEY (run_id, seq));`;
  const append = db.sql(`WITH ${appendCtes(s, undefined, 2)}
SELECT c.last, (SELECT count(*) FROM n) AS notified FROM c`);
  const dropExpired = db.sql(`
WITH l AS (DELETE FROM ${s}.run_event_logs WHERE run_id = $1 AND expires_at <= $2 RETURNING run_id)
DELETE FROM ${s}.run_events WHERE run_id IN (SELECT run_id FROM l)`);
  const read = db.sql(`
SELECT e.seq, e.event FROM ${s}.run_events e JOIN ${s}.run_event_logs l ON l.run_id = e.run_id
WHERE e.run_id = $1 AND e.seq > $2 AND (l.expires_at IS NULL OR l.expires_at > $4) ORDER BY e.seq LIMIT $3`);
  const lastSeq = db.sql(
    `SELECT last FROM ${s}.run_event_logs WHERE run_id = $1 AND (expires_at IS NULL OR expires_at > $2)`,
  );
  const sweep = db.sql(`
WITH l AS (DELETE FROM ${s}.run_event_logs WHERE run_id IN (
  SELECT run_id FROM ${s}.run_event_logs WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED) RETURNING run_id)
DELETE FROM ${s}.run_events WHERE run_id IN (SELECT run_id FROM l)`);
  const announce = db.sql('SELECT pg_notify($1, $2)');

  let ready: Promise<void> | undefined;
  const tables = (): Promise<void> =>
    (ready ??= db
      .migrate('run (events)')
      .then(() => db.pool.query({ text: ddl }))
      .then(
        () => undefined,
        (error: unknown) => {
          ready = undefined;
          throw storeFailure('run (events)', error);
        },
      ));
  let lastSweep = 0;
  const waiters = new Map<string, Set<() => void>>();
  const listeners = new Set<(runId: string) => void>();
  let listening: Promise<Listener> | undefined;
  let listener: Listener | undefined;

  const listen = (): Promise<Listener> => {
    if (listening) return listening;
    // A pg.Pool carries its Client class and options (not in PostgresPool: LISTEN needs a connection of its own).
    const pg = db.pool as unknown as { Client: new (options: unknown) => Listener; options: unknown };
    const client = new pg.Client(pg.options);
    listener = client;
    client.on('error', () => {
      // A broken LISTEN connection: the next wait opens another (waiters time out and read again meanwhile).
      if (listening) listening = undefined;
      client.end().catch(() => undefined);
    });
    client.on('notification', (n) => {
      const runId = n.payload ?? '';
      if (n.channel === announceChannel) {
        for (const l of listeners) l(runId);
        return;
      }
      const set = waiters.get(runId);
      if (!set) return;
      waiters.delete(runId);
      for (const wake of set) wake();
    });
    listening = client.connect().then(async () => {
      await client.query(`LISTEN ${eventsChannel}; LISTEN ${announceChannel}`);
      return client;
    });
    listening.catch(() => (listening = undefined));
    return listening;
  };

  const sweepEveryMs = options.sweepEveryMs ?? SWEEP_EVERY_MS;
  const kept = (now: number): void => {
    if (now - lastSweep < sweepEveryMs) return;
    lastSweep = now;
    db.query('run (events sweep)', sweep, [now, SWEEP_BATCH]).catch(() => undefined);
  };

  return {
    end: {
      statement: (ctes, p) =>
        db.sql(`WITH ${ctes},
${appendCtes(s, 'f', p)}
SELECT f.run_id, (SELECT count(*) FROM c) AS logged, (SELECT count(*) FROM n) AS notified FROM f`),
      values: (last, now) => [textList(last.events), now + last.keepMs, now, cap, eventsChannel, last.watched],
      ready: tables,
      kept,
    },
    async append(runId, events, keepMs) {
      await tables();
      const now = db.now();
      const expiresAt = keepMs === undefined ? null : now + keepMs;
      for (let round = 0; round < 2; round++) {
        const row = (
          await db.query<{ last: string }>('run (events)', append, [
            runId,
            textList(events),
            expiresAt,
            now,
            cap,
            eventsChannel,
            true,
          ])
        ).rows[0];
        if (row) {
          if (keepMs !== undefined) kept(now);
          return Number(row.last);
        }
        await db.query('run (events)', dropExpired, [runId, now]); // past its retention: as if gone
      }
      throw storeFailure(
        'run (events)',
        new Error(`the event log of run ${runId} kept changing while it was appended to`),
      );
    },

    async read(runId, after, limit) {
      await tables();
      const rows = (
        await db.query<{ seq: string; event: string }>('run (events)', read, [
          runId,
          after,
          Math.max(1, Math.floor(limit)),
          db.now(),
        ])
      ).rows;
      return rows.map((r) => ({ seq: Number(r.seq), runId, ...(decode(r.event) as object) }) as RunEvent);
    },

    async wait(runId, after, timeoutMs, signal) {
      if (signal?.aborted) return;
      try {
        await tables();
        await listen();
      } catch {
        // The database away: the reader tries again.
        return new Promise<void>((resolve) => setTimeout(resolve, Math.min(timeoutMs, 100)).unref?.());
      }
      if (signal?.aborted) return;
      await new Promise<void>((resolve) => {
        let set = waiters.get(runId);
        if (!set) waiters.set(runId, (set = new Set()));
        const held = set;
        const done = (): void => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', done);
          held.delete(done);
          if (held.size === 0 && waiters.get(runId) === held) waiters.delete(runId);
          resolve();
        };
        const timer = setTimeout(done, timeoutMs);
        signal?.addEventListener('abort', done, { once: true });
        held.add(done);
        // Listening now: an event appended before that (after the reader's last read) is seen here.
        db.query<{ last: string }>('run (events)', lastSeq, [runId, db.now()]).then(
          (r) => {
            if (r.rows[0] && Number(r.rows[0].last) > after) done();
          },
          () => undefined,
        );
      });
    },

    async announce(runId) {
      await tables();
      await db.query('run (events)', announce, [announceChannel, runId]);
    },

    onAnnounce(listener) {
      listeners.add(listener);
      listen().catch(() => undefined);
      return () => listeners.delete(listener);
    },

    async close() {
      const current = listening;
      const client = listener;
      listening = undefined;
      listener = undefined;
      if (current && client) await endListener(client, current);
      for (const set of waiters.values()) for (const wake of [...set]) wake();
      waiters.clear();
    },
  };
}
