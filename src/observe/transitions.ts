// Remembers each session's last tool so `tool:transition` can say which tool followed which.
import { BoundedLru } from '../util/lru.js';
import type { ToolTransition } from './trace.js';

const MAX_RECENT = 10;

/** A session's last finished call. */
export interface LastCall {
  tool: string;
  endedAt: number;
}

/** The transition from `prev` to a call of `tool` that ran from `startedAt` to `endedAt`. */
export function transitionFrom(
  prev: LastCall,
  sessionId: string,
  tool: string,
  startedAt: number,
  endedAt: number,
  success: boolean,
): ToolTransition {
  return {
    fromTool: prev.tool,
    toTool: tool,
    sessionId,
    success,
    timestamp: endedAt,
    gapMs: Math.max(0, startedAt - prev.endedAt),
  };
}

/**
 * Tracks the last tool call per session; bounded (least recently used sessions are forgotten).
 * Runs without a session keep their last call themselves and park it here only across a gate.
 */
export class TransitionTracker {
  private readonly last: BoundedLru<string, LastCall & { recent: readonly string[] }>;
  constructor(maxSessions = 10_000) {
    this.last = new BoundedLru(maxSessions);
  }

  /** Records a finished call; returns the transition from the session's previous call, if any. */
  record(
    sessionId: string,
    tool: string,
    startedAt: number,
    endedAt: number,
    success: boolean,
  ): ToolTransition | undefined {
    const prev = this.last.get(sessionId);
    // Exact-sized copies, not push: a pushed-to array keeps room for 17, and every session has one.
    const recent = !prev
      ? [tool]
      : prev.recent.length < MAX_RECENT
        ? [...prev.recent, tool]
        : [...prev.recent.slice(1), tool];
    this.put(sessionId, { tool, endedAt, recent });
    return prev && transitionFrom(prev, sessionId, tool, startedAt, endedAt, success);
  }

  /** Keeps a run's last call while it waits at a gate, for {@link TransitionTracker.take} on resume. */
  park(runId: string, call: LastCall): void {
    this.put(runId, { tool: call.tool, endedAt: call.endedAt, recent: [] });
  }

  /** Removes and returns what {@link TransitionTracker.park} kept. */
  take(runId: string): LastCall | undefined {
    const call = this.last.get(runId);
    this.last.delete(runId);
    return call;
  }

  /** Drops a session. */
  forget(sessionId: string): void {
    this.last.delete(sessionId);
  }

  /** The session's last (up to 10) tools, oldest first. */
  recent(sessionId: string): readonly string[] {
    return this.last.get(sessionId)?.recent ?? [];
  }

  /** Stores an entry as the most recently used, forgetting the least recently used when full. */
  private put(id: string, entry: LastCall & { recent: readonly string[] }): void {
    this.last.set(id, entry);
  }

  clear(): void {
    this.last.clear();
  }
}
