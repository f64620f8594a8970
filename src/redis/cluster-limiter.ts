// One rate limit shared across processes (chainkit/redis): the memory limiter's fixed windows and
// concurrency cap (window-limiter.ts), kept in Redis by two Lua scripts of our own. A call reserves
// its window slot when it asks, so the wait is known at once (refused when it passes the deadline),
// window slots go in the order of asking across processes, and a call that gives up hands its slot back.
import { randomBytes } from 'node:crypto';
import type { RedisClient } from './client.js';
import { acquireScript, cancelScript, LEASE_GRACE_MS, UNBOUNDED_LEASE_MS, type Reply } from './limiter-scripts.js';
import type { RateLimitSpec } from '../define/tool.js';
import { abortAtDeadline, type AbortScope } from '../policies/abort.js';
import { delayUntil, MAX_TIMER_MS, STORE_WAIT_MS } from '../util/timer.js';
import { storeFailure } from '../stores/guard.js';
import { maxQueueOf, type Limiter, type Refusal, type Release } from '../policies/window-limiter.js';

/**
 * A call blocked by `maxConcurrent` asks again after this long, doubling while it stays blocked up to
 * {@link MAX_POLL_MS}: a slot freed in another process is not announced (one freed here is, at once),
 * and a thousand blocked limiters must not each ask Redis 20 times a second.
 */
const POLL_MS = 50;
const MAX_POLL_MS = 400;

const QUEUE_FULL: Refusal = { refused: 'queue_full' };
// Tokens name a call's lease and holes: unique across processes by a random part per process.
const PROCESS = randomBytes(9).toString('base64url');
let calls = 0;

/** One call in a {@link ClusterLimiter}, from asking until granted, refused or given up. */
class Call {
  readonly token = `${PROCESS}:${++calls}`;
  /** Blocked or waiting for its window: counted in the limiter's `queued`. */
  state: 'asking' | 'blocked' | 'window' | 'done' = 'asking';
  /** Its ask in flight is counted in the limiter's `mayQueue`. */
  mayQueue = false;
  /** The window its slot was reserved in, and the windows' origin then (what a cancel checks). */
  window = -1;
  origin = -1;
  /** Its wait for a window, or for an answer from Redis. */
  timer: ReturnType<typeof setTimeout> | undefined;
  off: () => void = () => {};
  cancelDeadline: () => void = () => {};

  constructor(
    readonly scope: AbortScope,
    readonly deadlineAt: number,
    readonly onWait: (() => void) | undefined,
    readonly resolve: (slot: Release | Refusal) => void,
    readonly reject: (reason: unknown) => void,
  ) {}
}

/**
 * One shared limit (a tool, or a tool and user): at most `limit` attempts start per `intervalMs`
 * window and at most `maxConcurrent` run at once, across every process on the same Redis. Calls of
 * this process wait in order; `maxQueue` bounds those waiting here.
 */
export class ClusterLimiter implements Limiter {
  /** Asks in flight that may take a later window (so end up waiting): they and `queued` fit `maxQueue`. */
  private mayQueue = 0;
  /** Calls waiting here, for a window or a concurrency slot: what `maxQueue` bounds. */
  private queued = 0;
  /** Slots granted here and not released. */
  private held = 0;
  /** Calls not granted or refused yet. */
  private readonly live = new Set<Call>();
  /** Calls blocked by `maxConcurrent`, in order: the first asks again on a release here, or after `pollMs`. */
  private blocked: Call[] = [];
  private poll: ReturnType<typeof setTimeout> | undefined;
  private pollMs = POLL_MS;
  /** The blocked call asking again, if one is; `again`: a slot was freed here meanwhile, ask once more if refused. */
  private asking: Call | undefined;
  private again = false;
  private readonly keys: readonly [string, string, string];
  private readonly maxQueue: number;

  constructor(
    private readonly redis: RedisClient,
    private readonly now: () => number,
    /** The limit's key prefix in Redis. */
    readonly bid: string,
    readonly spec: Readonly<RateLimitSpec>,
  ) {
    this.maxQueue = maxQueueOf(spec);
    // Windows by interval: after a change of `intervalMs`, old and new processes each keep their own windows.
    this.keys = [`${bid}:w:${spec.intervalMs}`, `${bid}:h:${spec.intervalMs}`, `${bid}:c`];
  }

  get idle(): boolean {
    return this.live.size === 0 && this.held === 0;
  }

  acquire(scope: AbortScope, deadlineAt: number, onWait?: () => void): Promise<Release | Refusal> | Refusal {
    // Refused at once only when calls wait already: with `maxQueue: 0`, a free slot is still granted.
    if (this.queued > 0 && this.queued >= this.maxQueue) return QUEUE_FULL;
    if (scope.aborted) return Promise.reject(scope.reason);
    return new Promise<Release | Refusal>((resolve, reject) => {
      const call = new Call(scope, deadlineAt, onWait, resolve, reject);
      this.live.add(call);
      call.off = scope.onAbort((reason) => this.giveUp(call, reason));
      this.ask(call);
    });
  }

  private ask(call: Call): void {
    const retry = call.state === 'blocked';
    // Behind calls blocked here, a newcomer takes no slot past them: it only learns a refusal for its window.
    const behind = !retry && this.head() !== undefined;
    // A blocked call is counted in `queued` already; another may wait only while the queue has room for it.
    const mayWait = retry || this.room();
    if (!retry && mayWait) {
      call.mayQueue = true;
      this.mayQueue++;
    }
    if (retry) {
      this.asking = call;
      this.again = false;
    }
    const t = this.now();
    const left = Number.isFinite(call.deadlineAt) ? Math.max(0, call.deadlineAt - t) : -1;
    let answered = false;
    const done = (): boolean => {
      if (answered) return false;
      answered = true;
      clearTimeout(silence);
      this.asked(call, retry);
      return true;
    };
    // Redis silent: the call fails `store_unavailable` by its deadline (at most STORE_WAIT_MS), as store calls do.
    const silence = setTimeout(
      () => {
        if (!done()) return;
        if (this.settle(call)) call.reject(storeFailure('rate-limit', 'no answer before the deadline'));
        if (retry) this.pump();
      },
      delayUntil(Math.min(call.deadlineAt, t + STORE_WAIT_MS), this.now),
    );
    call.timer = silence; // a call settled meanwhile (a cancel, `close()`) stops it: no timer outlives the call
    const { limit, intervalMs, maxConcurrent } = this.spec;
    acquireScript(this.redis, this.keys, [
      limit,
      intervalMs,
      maxConcurrent ?? -1,
      left,
      mayWait ? 1 : 0,
      call.token,
      LEASE_GRACE_MS,
      UNBOUNDED_LEASE_MS,
      behind ? 1 : 0,
    ]).then(
      (reply) => {
        if (done()) this.answered(call, reply as Reply, retry);
        else if ((reply as Reply)[0] === 3) this.cancelReply(call, reply as Reply); // answered after it gave up
      },
      (error: unknown) => {
        if (!done()) return;
        if (this.settle(call)) call.reject(storeFailure('rate-limit', error));
        if (retry) this.pump();
      },
    );
  }

  private asked(call: Call, retry: boolean): void {
    if (call.mayQueue) {
      call.mayQueue = false;
      this.mayQueue--;
    }
    if (this.asking === call) this.asking = undefined;
  }

  /** Whether one more call may wait here: those waiting and those that may, fewer than `maxQueue`. */
  private room(): boolean {
    return this.queued + this.mayQueue < this.maxQueue;
  }

  private answered(call: Call, reply: Reply, retry: boolean): void {
    if (call.state === 'done') {
      // Given up while asking: a slot it was given goes back.
      this.cancelReply(call, reply);
      if (retry) this.pump();
      return;
    }
    switch (reply[0]) {
      case 0:
        if (retry) {
          if (this.again) this.pump();
          else this.schedulePoll();
        } else if (this.room()) this.block(call);
        else this.refuse(call, QUEUE_FULL);
        return;
      case 1:
        if (retry) this.pollMs = POLL_MS; // the line moves on: the next one asks soon again
        this.refuse(call, { refused: 'wait', waitMs: reply[1] });
        break;
      case 2:
        // Asked while the queue looked full with asks that may wait; answered in order, it may have room now.
        if (this.room()) this.ask(call);
        else this.refuse(call, QUEUE_FULL);
        break;
      case 3: {
        if (retry) this.pollMs = POLL_MS;
        const [, wait, window, origin] = reply;
        call.window = window;
        call.origin = origin;
        if (wait <= 0) this.grant(call);
        else if (this.enter(call, 'window')) this.grantAt(call, Date.now() + wait);
        break;
      }
    }
    if (retry) this.pump();
  }

  /** Grants at `at` (this process's clock): in steps, as a timer holds at most ~24.8 days. */
  private grantAt(call: Call, at: number): void {
    const left = at - Date.now();
    if (left <= 0) this.grant(call);
    else call.timer = setTimeout(() => this.grantAt(call, at), Math.min(left, MAX_TIMER_MS));
  }

  private block(call: Call): void {
    if (!this.enter(call, 'blocked')) return;
    // How long a concurrency slot takes is not known: the deadline ends the wait.
    call.cancelDeadline = abortAtDeadline(
      call.scope,
      call.deadlineAt,
      this.now,
      'The deadline passed while waiting for a rate-limit slot.',
    );
    this.blocked.push(call);
    if (this.blocked.length === 1) {
      this.pollMs = POLL_MS;
      this.schedulePoll();
    }
  }

  /** Moves a call into a wait, counting it and telling `onWait` the first time; false if `onWait` aborted it. */
  private enter(call: Call, state: 'blocked' | 'window'): boolean {
    const first = call.state === 'asking';
    call.state = state;
    if (first) {
      this.queued++;
      try {
        call.onWait?.();
      } catch {
        // a logging hook that throws must not lose the call (nor reject where nobody listens)
      }
    }
    return call.state === state;
  }

  /** The first call still blocked, dropping those that left the line. */
  private head(): Call | undefined {
    while (this.blocked.length > 0 && this.blocked[0]!.state !== 'blocked') this.blocked.shift();
    return this.blocked[0];
  }

  /** The first blocked call asks again now (a slot may be free), unless it is asking already. */
  private pump(): void {
    clearTimeout(this.poll);
    this.poll = undefined;
    const head = this.head();
    if (!head) return;
    if (this.asking) this.again = true;
    else this.ask(head);
  }

  private schedulePoll(): void {
    if (this.poll) return;
    this.poll = setTimeout(() => {
      this.poll = undefined;
      this.pump();
    }, this.pollMs);
    this.pollMs = Math.min(2 * this.pollMs, MAX_POLL_MS);
  }

  private grant(call: Call): void {
    if (!this.settle(call)) return;
    this.held++;
    const leased = this.spec.maxConcurrent !== undefined;
    let released = false;
    call.resolve(() => {
      if (released) return;
      released = true;
      this.held--;
      // Sent before the next ask on the same connection, so the slot is free when that one comes.
      if (leased) this.redis.zrem(this.keys[2], call.token).catch(() => 0); // else it lapses with its lease
      this.pump();
    });
  }

  private refuse(call: Call, refusal: Refusal): void {
    if (this.settle(call)) call.resolve(refusal);
  }

  /** The run aborted (a cancel, its deadline, `close()`): a reserved slot goes back. */
  private giveUp(call: Call, reason: unknown): void {
    const reserved = call.state === 'window';
    const asking = this.asking === call;
    if (!this.settle(call)) return;
    call.reject(reason);
    if (reserved) void this.cancel(call);
    if (asking) {
      this.asking = undefined; // its answer, when it comes, is handed back: the next in line asks now
      this.pump();
    }
  }

  /** A slot granted to a call that gave up while asking goes back. */
  private cancelReply(call: Call, reply: Reply): void {
    if (reply[0] !== 3) return;
    call.window = reply[2];
    call.origin = reply[3];
    void this.cancel(call);
  }

  private cancel(call: Call): Promise<unknown> {
    // Best effort: were Redis away, the slot stays taken (never given twice) and the lease lapses.
    const args = [call.token, call.window, this.spec.intervalMs, call.origin];
    return cancelScript(this.redis, this.keys, args).catch(() => 0);
  }

  /** Ends a call's wait; false if it had ended already. */
  private settle(call: Call): boolean {
    if (call.state === 'done') return false;
    if (call.state !== 'asking') this.queued--;
    call.state = 'done';
    this.live.delete(call);
    if (call.mayQueue) {
      call.mayQueue = false; // an answer that comes later is handed back, never queued
      this.mayQueue--;
    }
    clearTimeout(call.timer);
    call.cancelDeadline();
    call.off();
    return true;
  }

  /** Rejects every call still waiting with `reason`, giving their slots back. */
  async close(reason: unknown): Promise<void> {
    clearTimeout(this.poll);
    this.poll = undefined;
    const cancels: Promise<unknown>[] = [];
    for (const call of [...this.live]) {
      const reserved = call.state === 'window';
      if (!this.settle(call)) continue;
      call.reject(reason);
      if (reserved) cancels.push(this.cancel(call));
    }
    this.blocked = [];
    await Promise.all(cancels);
  }
}
