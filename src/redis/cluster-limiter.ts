// One rate limit shared across processes (chainkit/redis): a bottleneck limiter on Redis whose wait
// is computed from its state in Redis and refused fast, like the memory limiter's (limiter.ts: the store).
import Bottleneck from 'bottleneck';
import type { RedisClient } from './client.js';
import type { RateLimitSpec } from '../define/tool.js';
import { abortAtDeadline, type AbortScope } from '../policies/abort.js';
import { storeFailure } from '../stores/guard.js';
import { earliestSlot, maxQueueOf, type Limiter, type Refusal, type Release } from '../policies/window-limiter.js';

// How long past its deadline a job may hold a slot before the cluster reclaims it (a process that died mid-call).
const EXPIRY_GRACE_MS = 5_000;
// Redis 7 prefixes script errors with "ERR ", which bottleneck 2's own recovery does not expect.
const LOST_STATE = /SETTINGS_KEY_NOT_FOUND|UNKNOWN_CLIENT/;
const QUEUE_FULL: Refusal = { refused: 'queue_full' };

// KEYS: a bottleneck limiter's settings hash and its per-client queue counts. What a wait estimate
// needs — reservoir, when it was last refilled, calls waiting across the cluster, running, maxConcurrent —
// or false before its first use. Reads bottleneck 2.19.5's key layout (its refs.lua / process_tick.lua),
// pinned by package.json and checked by test/redis/bottleneck-layout.test.ts.
const LIMITER_STATE = `
local s = redis.call('HMGET', KEYS[1], 'reservoir', 'lastReservoirRefresh', 'running', 'maxConcurrent')
local reservoir, last = tonumber(s[1]), tonumber(s[2])
if not reservoir or not last then return false end
local queued = 0
for _, n in ipairs(redis.call('HVALS', KEYS[2])) do
  local q = tonumber(n) or 0
  if q > 0 then queued = queued + q end
end
return {reservoir, last, queued, tonumber(s[3]) or 0, tonumber(s[4]) or -1}`;

/** What {@link LIMITER_STATE} returns: reservoir, last refill, queued, running, maxConcurrent (-1: none). */
type LimiterState = [number, number, number, number, number];

/** One bottleneck limiter and the jobs this process has on it. */
interface Instance {
  readonly b: Bottleneck;
  jobs: number;
  retired: boolean;
}

/** What a {@link ClusterLimiter} needs from its store. */
export interface Cluster {
  readonly redis: RedisClient;
  readonly now: () => number;
  open(limiter: ClusterLimiter): Bottleneck;
}

/**
 * One shared limit (a tool, or a tool and user): a bottleneck limiter on Redis, whose slot is a job
 * held open until the attempt ends. Before queueing, the wait is computed from the limiter's state
 * in Redis and refused when the slot would come after the deadline. If Redis lost the state (a
 * restart, an expired idle limit), the bottleneck limiter is recreated and the call tried once more.
 */
export class ClusterLimiter implements Limiter {
  /** Calls in `acquire` here, in this process, not granted or refused yet. */
  waiting = 0;
  /** Of these, the ones handed to bottleneck: calls ahead of a newcomer. */
  scheduled = 0;
  /** Of these, the ones known to wait (the estimate said so): what `maxQueue` bounds. */
  queued = 0;
  /** Bottleneck jobs of this process not finished yet (a waiter that gave up leaves its job queued). */
  jobs = 0;
  /** Slots granted in this process so far. */
  private grants = 0;
  lastActive: number;
  private current: Instance | undefined;
  private readonly maxQueue: number;

  constructor(
    private readonly cluster: Cluster,
    readonly bid: string,
    readonly spec: Readonly<RateLimitSpec>,
    readonly ttlMs: number | undefined,
  ) {
    this.lastActive = cluster.now();
    this.maxQueue = maxQueueOf(spec);
  }

  get idle(): boolean {
    return this.waiting === 0 && this.jobs === 0;
  }

  acquire(scope: AbortScope, deadlineAt: number, onWait?: () => void): Release | Promise<Release | Refusal> | Refusal {
    const { now } = this.cluster;
    this.lastActive = now();
    // A newcomer waits behind the calls already queued here (first come, first served): refused at once.
    if (this.queued >= this.maxQueue) return QUEUE_FULL;
    if (scope.aborted) return Promise.reject(scope.reason);
    this.waiting++;
    return new Promise<Release | Refusal>((resolve, reject) => {
      let settled = false;
      let inBottleneck = false;
      let inQueue = false;
      const cancelDeadline = abortAtDeadline(
        scope,
        deadlineAt,
        now,
        'The deadline passed while waiting for a rate-limit slot.',
      );
      const settle = (): boolean => {
        if (settled) return false;
        settled = true;
        this.waiting--;
        if (inBottleneck) this.scheduled--;
        if (inQueue) this.queued--;
        cancelDeadline();
        off();
        return true;
      };
      const off = scope.onAbort((reason) => {
        if (settle()) reject(reason);
      });
      let release: Release = () => {};
      const held = new Promise<void>((r) => {
        release = r;
      });
      const task = (): Promise<void> => {
        if (!settle()) return Promise.resolve(); // nobody wants the slot any more: give it back
        this.grants++;
        resolve(release);
        return held;
      };
      const expiration = Number.isFinite(deadlineAt)
        ? Math.max(1000, Math.ceil(deadlineAt - now()) + EXPIRY_GRACE_MS)
        : undefined;
      const schedule = (first: boolean): void => {
        let inst: Instance;
        try {
          inst = this.instance();
        } catch (error) {
          if (settle()) reject(storeFailure('rate-limit', error));
          return;
        }
        inst.jobs++;
        this.jobs++;
        const ended = (): void => this.ended(inst);
        inst.b.schedule(expiration === undefined ? {} : { expiration }, task).then(ended, (error: unknown) => {
          ended();
          if (settled) return; // granted (then expired), or given up already
          if (first && error instanceof Error && LOST_STATE.test(error.message)) {
            this.retire(inst);
            return schedule(false);
          }
          if (error instanceof Bottleneck.BottleneckError && /dropped/i.test(error.message)) {
            if (settle()) resolve(QUEUE_FULL); // bottleneck's highWater: more waiting than this process knew
            return;
          }
          if (settle()) reject(storeFailure('rate-limit', error));
        });
      };
      // Decided in the reply's own callback, so each call counts the ones scheduled before it.
      const grantsBefore = this.grants;
      this.cluster.redis.eval(LIMITER_STATE, 2, `b_${this.bid}_settings`, `b_${this.bid}_client_num_queued`).then(
        (state) => {
          if (settled) return;
          const wait = this.estimate(state as LimiterState | null, grantsBefore, deadlineAt);
          if (typeof wait === 'number') {
            if (settle()) resolve({ refused: 'wait', waitMs: wait });
            return;
          }
          if (wait === 'queue') {
            if (this.queued >= this.maxQueue) {
              if (settle()) resolve(QUEUE_FULL);
              return;
            }
            inQueue = true;
            this.queued++;
            try {
              onWait?.();
            } catch {
              // a logging hook that throws must not lose the call (nor reject where nobody listens)
            }
          }
          inBottleneck = true;
          this.scheduled++;
          schedule(true);
        },
        (error: unknown) => {
          if (settle()) reject(storeFailure('rate-limit', error));
        },
      );
    });
  }

  /**
   * From the limiter's state in Redis: the wait (ms) if the slot comes after `deadlineAt`, 'queue'
   * if the call will wait, 'go' if a slot looks free.
   */
  private estimate(state: LimiterState | null, grantsBefore: number, deadlineAt: number): number | 'queue' | 'go' {
    const { now } = this.cluster;
    // Bottleneck's clock is this process's Date.now(); a tick at or after lastRefresh + interval refills the reservoir.
    const t = Date.now();
    const { limit, intervalMs } = this.spec;
    // No state yet: the first call creates it, with a full window starting now.
    const [reservoir, lastRefresh, queued, running, maxConcurrent] = state ?? [
      limit,
      t,
      0,
      0,
      this.spec.maxConcurrent ?? -1,
    ];
    const refilled = t >= lastRefresh + intervalMs;
    // Calls ahead: those queued across the cluster, or those this process handed to bottleneck
    // before (Redis answers in order, so they were scheduled first), if not all counted there yet;
    // plus slots granted here since the state was asked for, which it may not show yet.
    const ahead = Math.max(queued, this.scheduled) + (this.grants - grantsBefore);
    const grantAt = earliestSlot(this.spec, refilled ? t : lastRefresh, refilled ? limit : reservoir, ahead);
    if (grantAt !== undefined) {
      const waitMs = grantAt - t;
      return now() + waitMs >= deadlineAt ? waitMs : 'queue';
    }
    // A slot is left in this window: only a concurrency cap (running, plus the calls ahead) makes it wait.
    return maxConcurrent >= 0 && running + ahead >= maxConcurrent ? 'queue' : 'go';
  }

  private instance(): Instance {
    return (this.current ??= { b: this.cluster.open(this), jobs: 0, retired: false });
  }

  private ended(inst: Instance): void {
    inst.jobs--;
    this.jobs--;
    if (inst.retired && inst.jobs === 0) detach(inst.b);
  }

  /** Stops using a bottleneck limiter; it is detached once its jobs are done. */
  private retire(inst: Instance): void {
    if (this.current === inst) this.current = undefined;
    inst.retired = true;
    if (inst.jobs === 0) detach(inst.b);
  }

  /** Dropped from the store: detach the bottleneck limiter (at once, or when its jobs are done). */
  close(): void {
    if (this.current) this.retire(this.current);
  }
}

/** Detaches a limiter from the shared connection, once it is set up (else its heartbeat would start afterwards). */
function detach(b: Bottleneck): void {
  void b
    .ready()
    .then(() => b.disconnect(false))
    .catch(() => undefined);
}
