// Carries what a runner learns to and from a LearningStore: load once, then append in batches.
import type { ToolTransition } from '../observe/trace.js';
import type { LearnedData, LearningStore, TimingSample } from '../stores/types.js';
import type { MetricsCollector } from './metrics.js';
import type { TimingModel } from './timing.js';

const FLUSH_MS = 1000;
const FLUSH_AT = 500;

/** Buffers learning and writes it to the store; `ready` settles when the stored data is loaded. */
export class LearningSync {
  readonly ready: Promise<void>;
  private transitions: ToolTransition[] = [];
  private samples: TimingSample[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: LearningStore,
    metrics: MetricsCollector,
    timing: TimingModel,
    onError: (error: unknown) => void,
  ) {
    this.ready = Promise.resolve()
      .then(() => store.load())
      .then((data) => {
        for (const t of data.transitions) metrics.recordTransition(t);
        for (const s of data.samples) timing.record(s.tool, s.durationMs, s.complexity);
      })
      .catch(onError); // learning is an aid: a store that cannot load must not stop the runner
    this.onError = onError;
  }

  private readonly onError: (error: unknown) => void;

  transition(t: ToolTransition): void {
    this.transitions.push(t);
    this.schedule();
  }

  sample(tool: string, durationMs: number, complexity: number): void {
    this.samples.push({ tool, durationMs, complexity });
    this.schedule();
  }

  private schedule(): void {
    if (this.transitions.length + this.samples.length >= FLUSH_AT) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), FLUSH_MS);
      this.timer.unref?.(); // never keeps a process alive
    }
  }

  /** Writes what is buffered (in order: one batch at a time). */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.transitions.length === 0 && this.samples.length === 0) return this.writing;
    const batch: LearnedData = { transitions: this.transitions, samples: this.samples };
    this.transitions = [];
    this.samples = [];
    this.writing = this.writing.then(() => this.store.append(batch)).catch(this.onError);
    return this.writing;
  }
}
