// A light abort scope for runs and attempts. AbortController/EventTarget cost more than the rest of
// a step put together, so the real AbortSignal is only made when a tool actually reads it.
import { delayUntil } from '../util/timer.js';
import { RunAbortReason } from '../errors/failure.js';

/**
 * Aborts once, calling its listeners; hands out a real `AbortSignal` on first use. Runs and
 * attempts use it; a custom {@link Limiter} receives one to give up waiting when the run aborts.
 *
 * @example
 * ```ts
 * const scope = new AbortScope();
 * const off = scope.onAbort((reason) => console.log('aborted:', reason));
 * scope.abort('done'); // logs "aborted: done"
 * off();
 * ```
 */
export class AbortScope {
  aborted = false;
  reason: unknown = undefined;
  // Functions to call, or child scopes to abort along (a child costs no closure). Most scopes have
  // at most one listener at a time (a run's current attempt): it takes a field, a Set only for more.
  private listener: Listener | undefined;
  private listeners: Set<Listener> | undefined;
  private controller: AbortController | undefined;

  /** Aborts with `reason` (first call wins) and notifies every listener. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.controller?.abort(reason);
    const { listener, listeners } = this;
    this.listener = this.listeners = undefined;
    if (listener) notify(listener, reason);
    if (listeners) for (const l of listeners) notify(l, reason);
  }

  /** Aborts `child` along with this scope (at once if already aborted) until {@link AbortScope.unlink}. */
  link(child: AbortScope): void {
    if (this.aborted) child.abort(this.reason);
    else this.add(child);
  }

  /** Stops aborting `child` along with this scope. */
  unlink(child: AbortScope): void {
    this.remove(child);
  }

  /** Calls `fn` on abort (at once if already aborted); returns the function that unsubscribes. */
  onAbort(fn: (reason: unknown) => void): () => void {
    if (this.aborted) {
      fn(this.reason);
      return noop;
    }
    this.add(fn);
    return () => this.remove(fn);
  }

  private add(l: Listener): void {
    if (this.listener === l) return;
    if (this.listener === undefined && !this.listeners?.size) this.listener = l;
    else (this.listeners ??= new Set()).add(l);
  }

  private remove(l: Listener): void {
    if (this.listener === l) this.listener = undefined;
    else this.listeners?.delete(l);
  }

  /** A standard `AbortSignal` that follows this scope. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }
}

type Listener = ((reason: unknown) => void) | AbortScope;

function notify(l: Listener, reason: unknown): void {
  if (typeof l === 'function') l(reason);
  else l.abort(reason);
}

function noop(): void {}

/** Resolves with the promise, or rejects with the scope's reason if it aborts first. */
export function untilAborted<T>(promise: Promise<T>, scope: AbortScope): Promise<T> {
  if (scope.aborted) return Promise.reject(scope.reason);
  return new Promise<T>((resolve, reject) => {
    const off = scope.onAbort(reject);
    promise.then(
      (v) => {
        off();
        resolve(v);
      },
      (e) => {
        off();
        reject(e);
      },
    );
  });
}

/** Waits `ms`, or rejects as soon as the scope aborts; leaves no timer behind. */
export function sleep(ms: number, scope: AbortScope): Promise<void> {
  if (scope.aborted) return Promise.reject(scope.reason);
  return new Promise((resolve, reject) => {
    const off = scope.onAbort((reason) => {
      clearTimeout(timer);
      reject(reason);
    });
    const timer = setTimeout(() => {
      off();
      resolve();
    }, ms);
  });
}

/** Aborts `scope` with a `deadline` reason at `deadlineAt`; returns the function that cancels it. */
export function abortAtDeadline(scope: AbortScope, deadlineAt: number, now: () => number, message: string): () => void {
  const timer = setTimeout(() => scope.abort(new RunAbortReason('deadline', message)), delayUntil(deadlineAt, now));
  return () => clearTimeout(timer);
}

interface SignalFanOut {
  readonly fns: Set<() => void>;
  readonly listener: () => void;
}
const fanOuts = new WeakMap<AbortSignal, SignalFanOut>();

/**
 * Calls `fn` when a caller's `signal` aborts (at once if it already has); returns the function that
 * unsubscribes. Every run and call sharing one signal shares one listener on it: a signal passed to
 * more than 10 runs at once would otherwise trip Node's MaxListenersExceededWarning.
 */
export function onSignalAbort(signal: AbortSignal, fn: () => void): () => void {
  if (signal.aborted) {
    fn();
    return noop;
  }
  let fan = fanOuts.get(signal);
  if (!fan) {
    const fns = new Set<() => void>();
    const listener = (): void => {
      fanOuts.delete(signal);
      for (const f of fns) f();
    };
    fan = { fns, listener };
    fanOuts.set(signal, fan);
    signal.addEventListener('abort', listener, { once: true });
  }
  const { fns, listener } = fan;
  fns.add(fn);
  return () => {
    if (!fns.delete(fn) || fns.size > 0) return;
    fanOuts.delete(signal);
    signal.removeEventListener('abort', listener);
  };
}
