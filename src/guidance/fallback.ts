// Fallback advice: after repeated failures in a session, tell the agent what to try instead.
import type { ErrorCategory } from '../errors/categories.js';
import { BoundedLru } from '../util/lru.js';

/** One advice rule: for failures of `tool` (or any, `'*'`) with `category` (or any, `'*'`). */
export interface FallbackRule {
  tool: string | '*';
  category: ErrorCategory | '*';
  advice: string;
}

/**
 * Sensible defaults for every category (any tool). User rules are merged over them.
 *
 * @example
 * ```ts
 * DEFAULT_FALLBACKS.find((r) => r.category === 'rate_limited')?.advice;
 * ```
 */
const DEFAULT_FALLBACKS: readonly FallbackRule[] = Object.freeze([
  {
    tool: '*',
    category: 'invalid_input',
    advice:
      'Check the arguments against the tool schema; ask the user for missing or malformed values instead of guessing.',
  },
  {
    tool: '*',
    category: 'validation',
    advice: 'The tool returned unexpected data; do not retry it — report the problem and continue without this result.',
  },
  {
    tool: '*',
    category: 'not_found',
    advice: 'List the available items first and pick from what exists, or ask the user which item they mean.',
  },
  {
    tool: '*',
    category: 'ambiguous',
    advice: 'Several items match; show the candidates and ask the user to choose one.',
  },
  {
    tool: '*',
    category: 'permission_denied',
    advice: 'The user may not do this; stop and tell them, or act only on items they own.',
  },
  { tool: '*', category: 'authentication_required', advice: 'Ask the user to sign in again before retrying.' },
  {
    tool: '*',
    category: 'conflict',
    advice: 'The item changed meanwhile; re-read it and apply the change to the current version.',
  },
  {
    tool: '*',
    category: 'rate_limited',
    advice: 'Slow down: wait for retryAfterMs, batch work, or save progress and continue later.',
  },
  {
    tool: '*',
    category: 'timeout',
    advice: 'Ask for less at once (narrow the query or split the input), or use a faster tool if there is one.',
  },
  { tool: '*', category: 'unavailable', advice: 'The service is down; try again later or use an alternative tool.' },
  {
    tool: '*',
    category: 'internal',
    advice: 'The service keeps failing; stop retrying this tool for now and tell the user.',
  },
  { tool: '*', category: 'network', advice: 'The service is unreachable; check connectivity or try again later.' },
  {
    tool: '*',
    category: 'circuit_open',
    advice: 'This tool is switched off after repeated failures; wait for retryAfterMs or use another tool.',
  },
  { tool: '*', category: 'queue_full', advice: 'Too many calls are waiting; back off before calling this tool again.' },
  {
    tool: '*',
    category: 'cancelled',
    advice: 'The call was cancelled; start it again only if the user still wants it.',
  },
  {
    tool: '*',
    category: 'confirmation',
    advice: 'The confirmation is no longer valid; start the action again to get a new one.',
  },
  { tool: '*', category: 'unknown', advice: 'An unexpected error repeats; stop and report it with the run id.' },
]);

/**
 * Said after many recent failures in one session.
 *
 * @example
 * ```ts
 * if (result.metadata.advice.includes(STEP_BACK_ADVICE)) askUserToRephrase();
 * ```
 */
export const STEP_BACK_ADVICE =
  'Several calls failed in this session. Step back: re-check what the user asked for, ' +
  'and consider another approach or asking the user before calling more tools.';

interface SessionState {
  failures: { tool: string; category: ErrorCategory }[];
  consecutive: Map<string, number>;
}

/** Options of {@link FallbackAdvisor}. */
export interface FallbackOptions {
  /** Consecutive failures of one tool before its advice is given. Default 2. */
  consecutive?: number;
  /** Recent failures in a session before the step-back message. Default 5. */
  stepBack?: number;
  /** Failures remembered per session. Default 20. */
  historyCap?: number;
  /** Sessions remembered (least recently used dropped). Default 10 000. */
  maxSessions?: number;
}

/**
 * Tracks failures per session and answers with advice from the fallback map: (tool, category) →
 * (tool, any) → (any, category). Never throws: advice must not break a call.
 *
 * @example
 * ```ts
 * const advisor = new FallbackAdvisor([{ tool: 'search', category: 'timeout', advice: 'Use quick_search instead.' }]);
 * advisor.record('s1', 'search', 'timeout');
 * advisor.record('s1', 'search', 'timeout');
 * advisor.advice('s1', 'search'); // ['Use quick_search instead.']
 * ```
 */
export class FallbackAdvisor {
  private readonly rules = new Map<string, string>();
  private readonly sessions: BoundedLru<string, SessionState>;
  private readonly opts: Required<FallbackOptions>;

  constructor(rules: readonly FallbackRule[] = [], options: FallbackOptions = {}) {
    // user rules win
    for (const r of [...DEFAULT_FALLBACKS, ...rules]) this.rules.set(`${r.tool}\u0000${r.category}`, r.advice);
    this.opts = { consecutive: 2, stepBack: 5, historyCap: 20, maxSessions: 10_000, ...options };
    this.sessions = new BoundedLru(this.opts.maxSessions);
  }

  /** Records a call's outcome: a category for a failure, `undefined` for a success. */
  record(sessionId: string, tool: string, failure: ErrorCategory | undefined): void {
    let s = this.sessions.get(sessionId);
    // A success only resets a streak: a session with no failures needs no state (the common case).
    if (failure === undefined) {
      s?.consecutive.delete(tool);
      return;
    }
    s ??= { failures: [], consecutive: new Map() };
    this.sessions.set(sessionId, s); // (again) the most recently used
    s.consecutive.set(tool, (s.consecutive.get(tool) ?? 0) + 1);
    s.failures.push({ tool, category: failure });
    if (s.failures.length > this.opts.historyCap) s.failures.shift();
  }

  /** Drops a session's history (a run without a sessionId is its own session, over when it ends). */
  forget(sessionId: string): void {
    this.sessions.delete(sessionId);
  }

  /** Advice for the session after its latest call of `tool`. */
  advice(sessionId: string, tool: string): string[] {
    try {
      const s = this.sessions.get(sessionId);
      if (!s) return [];
      const out: string[] = [];
      const last = [...s.failures].reverse().find((f) => f.tool === tool);
      if (last && (s.consecutive.get(tool) ?? 0) >= this.opts.consecutive) {
        const advice =
          this.rules.get(`${tool}\u0000${last.category}`) ??
          this.rules.get(`${tool}\u0000*`) ??
          this.rules.get(`*\u0000${last.category}`);
        if (advice) out.push(advice);
      }
      if (s.failures.length >= this.opts.stepBack) out.push(STEP_BACK_ADVICE);
      return out;
    } catch {
      return [];
    }
  }
}
