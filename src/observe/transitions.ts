// Remembers each session's last tool so `tool:transition` can say which tool followed which.
import { evictOldest } from '../stores/bounded.js';
import type { ToolTransition } from './trace.js';

const MAX_RECENT = 10;

/** Tracks the last tool call per session; bounded (least recently used sessions are forgotten). */
export class TransitionTracker {
  private readonly last = new Map<string, { tool: string; endedAt: number; recent: readonly string[] }>();
  constructor(private readonly maxSessions = 10_000) {}

  /** Records a finished call; returns the transition from the session's previous call, if any. */
  record(sessionId: string, tool: string, startedAt: number, endedAt: number, success: boolean): ToolTransition | undefined {
    const prev = this.last.get(sessionId);
    if (prev) this.last.delete(sessionId); // re-insert below so Map order stays least-recently-used first
    else if (this.last.size >= this.maxSessions) evictOldest(this.last, this.maxSessions);
    // Exact-sized copies, not push: a pushed-to array keeps room for 17, and every run in flight has a trail.
    const recent = !prev ? [tool] : prev.recent.length < MAX_RECENT ? [...prev.recent, tool] : [...prev.recent.slice(1), tool];
    this.last.set(sessionId, { tool, endedAt, recent });
    if (!prev) return undefined;
    return { fromTool: prev.tool, toTool: tool, sessionId, success, timestamp: endedAt, gapMs: Math.max(0, startedAt - prev.endedAt) };
  }

  /** Drops a session (a run without a sessionId is its own session, over when the run ends). */
  forget(sessionId: string): void {
    this.last.delete(sessionId);
  }

  /** The session's last (up to 10) tools, oldest first. */
  recent(sessionId: string): readonly string[] {
    return this.last.get(sessionId)?.recent ?? [];
  }

  clear(): void {
    this.last.clear();
  }
}

