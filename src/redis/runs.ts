// Durable runs on Redis: one hash per run (the record as created, then its status, owner, lease,
// deadline, approved gate and result), one list for its journal, and one sorted set of the runs in
// flight scored by lease end, so expired leases are found without a scan. Every claim and finish is
// one Lua script: atomic, one round trip.
import type { RedisClient } from './client.js';
import { redisEventLog } from './run-events.js';
import { storeFailure, StoreFailure } from '../stores/guard.js';
import { encodeRunValue, parkedStep, storedRun } from '../stores/run-codec.js';
import { keepable } from './kept.js';
import { steered, summarize } from '../stores/run-list.js';
import type { RunStore } from '../stores/run-store.js';
import type { IdempotencyStore } from '../stores/types.js';
import type { CreateRunResult, StoredRun } from '../stores/run-store.js';
import type { RunStatus } from '../stores/run-listing.js';
import {
  claim,
  create,
  due,
  finish,
  get,
  journal,
  list,
  listContext,
  renew,
  reopen,
  requestCancel,
  retrying,
  takeParked,
  wakeAtScript,
} from './run-script-calls.js';
import { checkOptions, integer, integerMs, nonEmpty } from '../define/options.js';
import { z } from 'zod';

/** Options of {@link redisRunStore}. */
export interface RedisRunStoreOptions {
  /**
   * Namespace of every key: the same as `redisStores`' so
   * `journal(…, complete)` writes where its idempotency store reads.
   */
  prefix: string;
  /** How long a result kept by `journal(…, complete)` lives when the call gives no TTL. Default 24 h. */
  idempotencyTtlMs?: number;
  /** The idempotency store on the same prefix (`redisStores` passes its own): advertised as `runs.idempotency`. */
  idempotency?: IdempotencyStore;
  /** Events kept per run for `runner.watch` (its stream is trimmed to the newest). Default 10 000. */
  maxEventsPerRun?: number;
}

/** A stored run from a run hash (HGETALL, flat) and its journal. */
function fromHash(flat: readonly string[], entries: readonly string[]): StoredRun {
  const h = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) h.set(flat[i]!, flat[i + 1]!);
  return steered(
    storedRun(
      h.get('d')!,
      {
        status: h.get('status') as RunStatus,
        owner: h.get('owner') ?? '',
        leaseUntil: Number(h.get('lease')),
        deadlineAt: Number(h.get('deadline')),
        approvedGate: h.get('gate'),
        result: h.get('result'),
      },
      entries,
    ),
    h.get('retry'),
    h.get('cancel'),
  );
}

const REDIS_RUN_STORE_OPTIONS = z.object(
  {
    prefix: nonEmpty('prefix'),
    idempotencyTtlMs: integerMs('idempotencyTtlMs').optional(),
    maxEventsPerRun: integer('maxEventsPerRun', 1).optional(),
  },
  { error: 'Expected redisRunStore options { prefix, … }.' },
);

/**
 * A run store on Redis (normally used as `redisStores(redis, { prefix }).runs`). Runs are as durable
 * as the Redis holding them: use AOF persistence (`appendonly yes`, `appendfsync everysec` or
 * `always`) and no eviction (`maxmemory-policy noeviction`) for runs that must survive a Redis restart.
 * Keys: `<prefix>:run:<id>` (hash), `<prefix>:run-j:<id>` (journal list), `<prefix>:runs:live`
 * (sorted set of runs in flight), `<prefix>:runs:wake` (sorted set of waiting runs by wake-up).
 * Single-node Redis, like every chainkit script.
 *
 * @example
 * ```ts
 * import Redis from 'ioredis';
 * import { redisRunStore } from 'chainkit/redis';
 * const runs = redisRunStore(new Redis(), { prefix: 'myapp' });
 * ```
 */
export function redisRunStore(redis: RedisClient, options: RedisRunStoreOptions): RunStore {
  checkOptions('redisRunStore options', REDIS_RUN_STORE_OPTIONS, options);
  const p = options.prefix;
  const idemTtl = options.idempotencyTtlMs ?? 24 * 3_600_000;
  const live = `${p}:runs:live`;
  const idx = `${p}:runs:`;
  const runKey = (id: string): string => `${p}:run:${id}`;
  const journalKey = (id: string): string => `${p}:run-j:${id}`;
  // Every Redis failure is the store's; a value the codec refuses (a StoreFailure already) passes through.
  const guard = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (error) {
      throw error instanceof StoreFailure ? error : storeFailure(`run (${what})`, error);
    }
  };

  const events = redisEventLog(redis, {
    prefix: p,
    ...(options.maxEventsPerRun !== undefined && { maxEventsPerRun: options.maxEventsPerRun }),
  });

  return {
    ...(options.idempotency && { idempotency: options.idempotency }),
    events,
    close: () => events.close(),
    create: (record, now) =>
      guard('create', async (): Promise<CreateRunResult> => {
        const data = encodeRunValue(record);
        const r = (await create(
          redis,
          [runKey(record.runId), journalKey(record.runId), live],
          [
            data,
            record.owner,
            record.leaseUntil,
            record.deadlineAt,
            now,
            record.runId,
            record.chain,
            record.fingerprint,
            record.contextHash ?? '',
            record.startedAt,
            idx,
            `${p}:run:`,
          ],
        )) as 'created' | 'mismatch' | [string, string[], string[], string];
        if (r === 'created' || r === 'mismatch') return { status: r };
        const [kind, hash, entries, previousOwner] = r;
        const run = fromHash(hash, entries);
        if (kind === 'taken') run.previousOwner = previousOwner;
        return { status: kind as 'ended' | 'busy' | 'taken', run };
      }),
    journal: (runId, owner, entries, complete) =>
      guard('journal', async () => {
        const data = entries.map(encodeRunValue);
        const keys = [runKey(runId), journalKey(runId)];
        const kept = complete && keepable(complete.value, Date.now());
        // The idempotency store's own key and encoding: it reads this as a kept result.
        if (kept !== undefined) keys.push(`${p}:idem:${complete!.key}`);
        const args = [
          owner,
          kept ?? '',
          kept === undefined ? '' : Math.max(1, Math.ceil(complete!.ttlMs ?? idemTtl)),
          ...data,
        ];
        return (await journal(redis, keys, args)) === 1;
      }),
    renew: (owner, runIds, leaseUntil) =>
      guard('renew', async () =>
        runIds.length > 0
          ? ((await renew(redis, [live], [owner, leaseUntil, `${p}:run:`, ...runIds])) as string[])
          : [],
      ),
    finish: (runId, owner, status, result, retentionMs, entries = []) =>
      guard('finish', async () => {
        const data = encodeRunValue(result);
        const journaled = entries.map((e) => encodeRunValue(e));
        const ms = Number.isFinite(retentionMs) ? Math.max(1, Math.ceil(retentionMs)) : 0;
        return (
          (await finish(
            redis,
            [runKey(runId), journalKey(runId), live],
            [
              owner,
              status,
              data,
              ms,
              runId,
              Date.now(),
              idx,
              `${p}:run:`,
              parkedStep(status, result) ?? '',
              ...journaled,
            ],
          )) === 1
        );
      }),
    reopen: (runId, owner, update) =>
      guard(
        'reopen',
        async () =>
          (await reopen(
            redis,
            [runKey(runId), journalKey(runId), live],
            [owner, update.leaseUntil, update.approvedGate, update.deadlineAt, runId, idx, `${p}:run:`],
          )) === 1,
      ),
    claimExpired: (owner, now, leaseUntil, limit, only) =>
      guard('claim', async () => {
        if (limit <= 0) return [];
        const filter = only ? ['1', idx, ...only.chains.flatMap((c) => [c.name, c.fingerprint])] : ['0', idx];
        const args = [
          owner,
          now,
          leaseUntil,
          Math.min(Math.floor(limit), 2 ** 31 - 1),
          `${p}:run:`,
          `${p}:run-j:`,
          only?.orphanedBefore ?? '',
          ...filter,
        ];
        const rows = (await claim(redis, [live], args)) as [string[], string[], string][];
        return rows.map(([hash, entries, previousOwner]) => ({ ...fromHash(hash, entries), previousOwner }));
      }),
    listsByContext: true,
    listRuns: (query) =>
      guard('list', async () => {
        const sets =
          query.contexts === undefined
            ? query.statuses.flatMap((st) => [
                query.chain === undefined ? `${idx}st:${st}` : `${idx}sc:${st}:${query.chain}`,
                st,
              ])
            : [
                query.statuses.join(','),
                ...query.contexts.flatMap((m) => {
                  const chains = JSON.stringify('chains' in m ? { in: m.chains } : { out: m.except });
                  // A run is in one of its context's two indexes: in flight or parked, or ended.
                  return [`${idx}cx:${m.hash}`, m.hash, chains, `${idx}cxe:${m.hash}`, m.hash, chains];
                }),
              ];
        // Lua reads the bounds with tonumber: a huge finite number where there is none.
        const bound = (n: number): string => (n === Infinity ? '1e300' : n === -Infinity ? '-1e300' : String(n));
        const args = [
          `${p}:run:`,
          `${p}:run-j:`,
          bound(query.since),
          bound(query.until),
          query.limit,
          query.after ? query.after.startedAt : '',
          query.after?.runId ?? '',
          query.chain ?? '',
          ...sets,
        ];
        const script = query.contexts === undefined ? list : listContext;
        const [rows, more] = (await script(redis, [], args)) as [[string, (string | null)[], string[]][], number];
        const runs = rows.map(([runId, [chain, status, started, ended, result, retry], journal]) =>
          summarize(
            {
              runId,
              chain: chain ?? '',
              status: status === 'running' && retry != null ? 'retrying' : (status as RunStatus),
              startedAt: Number(started ?? 0),
              ...(ended != null && { endedAt: Number(ended) }),
            },
            result,
            journal,
          ),
        );
        return { runs, more: more === 1 };
      }),
    get: (runId) =>
      guard('get', async () => {
        const [hash, entries] = (await get(redis, [runKey(runId), journalKey(runId)], [])) as [string[], string[]];
        return hash.length === 0 ? undefined : fromHash(hash, entries);
      }),
    markRetrying: (runId, owner, until) =>
      guard(
        'retrying',
        async () => (await retrying(redis, [runKey(runId)], [owner, until === null ? '' : until, runId, idx])) === 1,
      ),
    requestCancel: (runId, reason) =>
      guard('cancel', async () => (await requestCancel(redis, [runKey(runId)], [reason ?? ''])) === 1),
    takeParked: (runId, owner, from, update, entry, seen) =>
      guard('take', async () => {
        const data = entry ? encodeRunValue(entry) : '';
        const at = seen ? [seen.step, seen.journal] : ['', 0];
        return (
          (await takeParked(
            redis,
            [runKey(runId), journalKey(runId), live],
            [owner, update.leaseUntil, update.deadlineAt, runId, idx, `${p}:run:`, from, data, ...at],
          )) === 1
        );
      }),
    // The wake-up is indexed first: a runner that dies between the two writes leaves the run in flight
    // (recovered, it parks again) and a member the next due scan drops. Kept until taken (no retention).
    parkWaiting: (runId, owner, result, wakeAt, entries = []) =>
      guard('park', async () => {
        const data = encodeRunValue(result);
        const journaled = entries.map((e) => encodeRunValue(e));
        await wakeAtScript(redis, [`${p}:runs:wake`], [runId, wakeAt === null ? '' : wakeAt]);
        return (
          (await finish(
            redis,
            [runKey(runId), journalKey(runId), live],
            [
              owner,
              'waiting',
              data,
              0,
              runId,
              Date.now(),
              idx,
              `${p}:run:`,
              parkedStep('waiting', result) ?? '',
              ...journaled,
            ],
          )) === 1
        );
      }),
    dueWaiting: (now, limit, only) =>
      guard('due', async () => {
        if (!(limit >= 1)) return [];
        const filter = only ? ['1', ...only.chains.flatMap((c) => [c.name, c.fingerprint])] : ['0'];
        return (await due(
          redis,
          [`${p}:runs:wake`],
          [now, Math.min(Math.floor(limit), 2 ** 31 - 1), `${p}:run:`, ...filter],
        )) as string[];
      }),
  };
}
