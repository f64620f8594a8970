// What keeps the inspector's pages live: the runner's events listened to while a page is open, and
// the stream that tells each page that runs changed.
import type { BreakerChangeEvent, StepEndEvent, StepRetryEvent } from '../observe/events.js';
import type { RunEvent } from '../observe/run-events.js';
import type { Runner } from '../run/runner-api.js';

/** Listeners on the runner's events while at least one page is open: what tells pages something changed. */
export class LiveHub {
  private readonly pages = new Set<() => void>();
  private detach: (() => void) | undefined;
  readonly breakers = new Map<string, BreakerChangeEvent>();
  readonly limits = new Map<
    string,
    { tool: string; refusals: number; lastWaitMs?: number; lastCode: string; at: number }
  >();

  constructor(private readonly runner: Runner) {
    // Breaker changes are rare: always kept, so the page shows the state since the inspector was made.
    runner.events.on('breaker:change', (e) => this.breakers.set(e.tool, e));
  }

  private nudge = (): void => {
    for (const page of this.pages) page();
  };

  private limit(tool: string, code: string, category: string, waitMs: number | undefined): void {
    if (category !== 'rate_limited' && category !== 'queue_full') return;
    const row = this.limits.get(tool) ?? { tool, refusals: 0, lastCode: code, at: 0 };
    row.refusals++;
    row.lastCode = code;
    row.at = Date.now();
    if (waitMs !== undefined) row.lastWaitMs = waitMs;
    this.limits.set(tool, row);
    if (this.limits.size > 500) this.limits.delete(this.limits.keys().next().value!);
  }

  /** Adds a page; the runner's events are listened to only while a page is open. */
  open(page: () => void): () => void {
    this.pages.add(page);
    if (!this.detach) {
      const events = this.runner.events;
      const retry = (e: StepRetryEvent): void => this.limit(e.tool, e.code, e.category, e.delayMs);
      const end = (e: StepEndEvent): void => {
        if (e.error && e.tool) this.limit(e.tool, e.error.code, e.error.category, e.error.retryAfterMs);
        this.nudge();
      };
      const names = [
        'chain:start',
        'chain:end',
        'confirmation:requested',
        'run:end',
        'run:recovered',
        'breaker:change',
      ] as const;
      for (const n of names) events.on(n, this.nudge);
      events.on('step:retry', retry);
      events.on('step:end', end);
      this.detach = () => {
        for (const n of names) events.off(n, this.nudge);
        events.off('step:retry', retry);
        events.off('step:end', end);
      };
    }
    return () => {
      this.pages.delete(page);
      if (this.pages.size === 0) {
        this.detach?.();
        this.detach = undefined;
      }
    };
  }

  get openPages(): number {
    return this.pages.size;
  }
}

/**
 * The `text/event-stream` telling one page that runs changed (`changed`:
 * at once, then at most every 100 ms), until the page goes away.
 */
export function liveStream(hub: LiveHub, signal: AbortSignal): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let close: (() => void) | undefined;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      let beat: ReturnType<typeof setInterval> | undefined;
      const send = (text: string): void => {
        try {
          controller.enqueue(encoder.encode(text));
        } catch {
          close?.();
        }
      };
      // At once for the first change, then at most every 100 ms (a burst of step events is one nudge).
      let last = 0;
      const changed = (): void => {
        last = Date.now();
        send('event: changed\ndata: {}\n\n');
      };
      const off = hub.open(() => {
        if (timer !== undefined) return;
        const wait = last + 100 - Date.now();
        if (wait <= 0) changed();
        else
          timer = setTimeout(() => {
            timer = undefined;
            changed();
          }, wait);
      });
      beat = setInterval(() => send(': keep-alive\n\n'), 15_000);
      beat.unref?.();
      close = () => {
        if (!close) return;
        close = undefined;
        off();
        if (timer !== undefined) clearTimeout(timer);
        clearInterval(beat);
        try {
          controller.close();
        } catch {
          // closed already
        }
      };
      send('retry: 1000\n\nevent: ready\ndata: {}\n\n');
      if (signal.aborted) close();
      else signal.addEventListener('abort', () => close?.(), { once: true });
    },
    cancel() {
      close?.();
    },
  });
}

/** Maps an async iterable (events redacted on their way out). */
export async function* mapped(
  events: AsyncIterable<RunEvent>,
  fn: (e: RunEvent) => RunEvent,
): AsyncGenerator<RunEvent> {
  for await (const e of events) yield fn(e);
}
