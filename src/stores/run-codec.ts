// How every run store keeps durable runs: the checkpoint codec (a recovered run sees the Dates and
// BigInts its steps returned, as a resumed one does), and one way to put a stored run back together.
import { decodeCheckpoint, encodeCheckpoint } from './serialize.js';
import type { JournalEntry, RunRecord, StoredRun } from './run-store.js';
import type { RunStatus } from './run-listing.js';

// The codec walks any value; its signature names the checkpoint, its first user.
const encode = encodeCheckpoint as (value: unknown) => string;
const decode = decodeCheckpoint as (text: string) => unknown;

/**
 * Encodes a run record, a journal entry or a run's result. Throws `CheckpointEncodeError`
 * (`validation` / `checkpoint_unserializable`) for what no store can keep, before anything is written.
 *
 * @example
 * ```ts
 * const text = encodeRunValue(entry); // then store the string
 * ```
 */
export function encodeRunValue(value: unknown): string {
  // Most run values are plain JSON, for which JSON.stringify writes what the codec would, natively.
  return isPlain(value) ? JSON.stringify(value) : encode(value);
}

/**
 * Throws what {@link encodeRunValue} would throw for `value`, without making its text when it is
 * plain JSON: a value checked now (a step failed at once) and encoded later, with the write.
 *
 * @example
 * ```ts
 * checkRunValue(entry); // throws CheckpointEncodeError for a function, a cycle, a Map, …
 * ```
 */
export function checkRunValue(value: unknown): void {
  if (!isPlain(value)) encode(value);
}

function isPlain(value: unknown): boolean {
  try {
    return plainJson(value, 0);
  } catch {
    return false; // a throwing getter or a hostile Proxy: the codec refuses it with its own error
  }
}

/** Deeper than this, the codec decides (it refuses past its own limit). */
const FAST_DEPTH = 64;

/**
 * Whether JSON.stringify writes exactly what the codec writes: strings, finite numbers (not -0),
 * booleans, null, arrays and plain objects of them, without the codec's tag key (`$ck`) or symbol
 * keys. Anything else (undefined, Dates, BigInts, cycles, class instances, …) goes to the codec.
 */
function plainJson(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value) && !(value === 0 && 1 / value < 0);
    case 'object':
      break;
    default:
      return false;
  }
  if (value === null) return true;
  if (depth >= FAST_DEPTH) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!plainJson(value[i], depth + 1)) return false;
    return true;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (
    (proto !== Object.prototype && proto !== null) ||
    Object.hasOwn(value, '$ck') ||
    Object.getOwnPropertySymbols(value).length > 0
  )
    return false;
  for (const key in value) {
    if (!Object.hasOwn(value, key) || !plainJson((value as Record<string, unknown>)[key], depth + 1)) return false;
  }
  return true;
}

/** What changes of a run after it is recorded; the rest of the record never changes. */
export interface RunState {
  status: RunStatus;
  owner: string;
  leaseUntil: number;
  deadlineAt: number;
  approvedGate?: string | null | undefined;
  /** The encoded result (as {@link encodeRunValue} made it). */
  result?: string | null | undefined;
}

/**
 * A stored run from its encoded record (as created), its current state and its encoded journal
 * entries, oldest first. Every call decodes fresh copies.
 *
 * @example
 * ```ts
 * const run = storedRun(row.record, { status: row.status, owner: row.owner, leaseUntil, deadlineAt }, row.journal);
 * ```
 */
export function storedRun(record: string, state: RunState, journal: readonly string[]): StoredRun {
  const base = decode(record) as RunRecord;
  delete base.approvedGate;
  delete base.result;
  const run: StoredRun = {
    ...base,
    status: state.status,
    owner: state.owner,
    leaseUntil: state.leaseUntil,
    deadlineAt: state.deadlineAt,
    journal: journal.map((e) => decode(e) as JournalEntry),
  };
  if (state.approvedGate !== undefined && state.approvedGate !== null) run.approvedGate = state.approvedGate;
  if (state.result !== undefined && state.result !== null) run.result = decode(state.result);
  return run;
}

/**
 * Decodes what {@link encodeRunValue} wrote.
 *
 * @example
 * ```ts
 * const entry = decodeRunValue(text) as JournalEntry;
 * ```
 */
export function decodeRunValue(text: string): unknown {
  return decode(text);
}

/**
 * The step a run written with `status` is parked at, kept beside it for `RunStore.takeParked`'s
 * `seen`: a waiting run's `waiting.step`, an in-doubt run's `step`; none for any other status.
 *
 * @example
 * ```ts
 * parkedStep('waiting', { status: 'waiting', waiting: { step: 'approve' } }); // 'approve'
 * ```
 */
export function parkedStep(status: RunStatus, result: unknown): string | undefined {
  const r = result as { waiting?: { step?: unknown }; step?: unknown } | null | undefined;
  const step = status === 'waiting' ? r?.waiting?.step : status === 'in_doubt' ? r?.step : undefined;
  return typeof step === 'string' ? step : undefined;
}

/**
 * A write's result as an idempotency store keeps it (`null` for `undefined`): the run codec, so a
 * cached answer holds the Dates and BigInts the first one did. What the codec refuses (nesting
 * past its depth, a class instance) is kept as JSON writes it, as it always was; a value JSON cannot
 * hold either throws.
 *
 * @example
 * ```ts
 * const text = encodeKept({ at: new Date() }); // decodeKept(text) gives a Date back
 * ```
 */
export function encodeKept(value: unknown): string | null {
  if (value === undefined) return null;
  try {
    return encodeRunValue(value);
  } catch {
    return (JSON.stringify(value) as string | undefined) ?? null;
  }
}

/**
 * A kept result back from {@link encodeKept}'s text (or from an entry that holds it); plain JSON, as
 * kept before, reads the same.
 *
 * @example
 * ```ts
 * const value = decodeKept(row.value);
 * ```
 */
export function decodeKept(text: string | null): unknown {
  if (text === null) return undefined;
  try {
    return decode(text);
  } catch {
    return JSON.parse(text) as unknown; // kept as JSON: deeper than the codec reads
  }
}
