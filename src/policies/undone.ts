// A write's key after its undo: the store marks it undone (`IdempotencyStore.markUndone`) in place of
// the result taken back, and a later call with the key runs again under its next generation.
import type { CallContext, UndoneWrite } from './types.js';

/**
 * The key a tool sees for generation `g` of `key`: the key itself, then `key#1`, `key#2`… each after
 * the one before was undone.
 *
 * @example
 * ```ts
 * generationKey('req-42', 1); // 'req-42#1'
 * ```
 */
export function generationKey(key: string, g: number): string {
  return g === 0 ? key : `${key}#${g}`;
}

/**
 * The key the store keeps generation `g` of a call under: for a scoped key (`tool:hash:key`, see
 * `idempotencyStoreKey`) the generation goes after the tool's name, which holds no `#` or `:`, so
 * no key a caller chooses (`req-42#1`) is another key's generation.
 *
 * @example
 * ```ts
 * generationStoreKey('pay:3f…:req-42', 1); // 'pay#1:3f…:req-42'
 * ```
 */
export function generationStoreKey(storeKey: string, g: number): string {
  if (g === 0) return storeKey;
  const colon = storeKey.indexOf(':');
  return colon < 0 ? `${storeKey}#${g}` : `${storeKey.slice(0, colon)}#${g}${storeKey.slice(colon)}`;
}

/**
 * The key the store keeps the undo of a write under (`generationStoreKey`'s output): a mark after the
 * write tool's name, so no key a caller chooses (`milk:undo`) is an undo's.
 *
 * @example
 * ```ts
 * undoStoreKey('add#1:3f…:milk'); // 'add#1~undo:3f…:milk'
 * ```
 */
export function undoStoreKey(writeKey: string): string {
  const colon = writeKey.indexOf(':');
  return colon < 0 ? `${writeKey}~undo` : `${writeKey.slice(0, colon)}~undo${writeKey.slice(colon)}`;
}

/**
 * Whether a durable run's call is kept by the run's journal instead of the idempotency store: a step
 * under its own key (`runId:step`), which the run store lets one owner at a time run.
 *
 * @example
 * ```ts
 * if (!keptByJournal(ctx)) await store.begin(ctx.storeKey!, ctx.durable);
 * ```
 */
export function keptByJournal(ctx: CallContext): boolean {
  const key = ctx.idempotencyKey;
  const step = ctx.step;
  return (
    ctx.durable !== undefined &&
    key !== undefined &&
    step !== undefined &&
    key.length === ctx.runId.length + 1 + step.length &&
    key === `${ctx.runId}:${step}`
  );
}

/**
 * Whether two results of a write are the same value as the stores keep it (JSON values, Dates, BigInts,
 * `undefined`; a field `undefined` is a field absent): the result a key holds against the one a run
 * knows, which went through a store or a journal and back. Nesting past the stores' limit is not the same.
 *
 * @example
 * ```ts
 * sameResult({ id: 't1', at: new Date(0) }, { id: 't1', at: new Date(0) }); // true
 * ```
 */
export function sameResult(a: unknown, b: unknown, depth = 0): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || depth > 1000) return false;
  if (a instanceof Date || b instanceof Date)
    return a instanceof Date && b instanceof Date && Object.is(a.getTime(), b.getTime());
  // Anything but plain data (a Map, a class instance) is the same only as itself: its state is not its fields.
  if (!plain(a) || !plain(b)) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameResult(a[i], b[i], depth + 1)) return false;
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let fields = 0;
  for (const k in x) {
    if (!Object.hasOwn(x, k) || x[k] === undefined) continue;
    if (!Object.hasOwn(y, k) || !sameResult(x[k], y[k], depth + 1)) return false;
    fields++;
  }
  for (const k in y) if (Object.hasOwn(y, k) && y[k] !== undefined) fields--;
  return fields === 0;
}

const plain = (value: object): boolean => {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null || Array.isArray(value);
};

// How far apart two instances' clocks may be: a result kept this long after its write's step ended is its own.
// Small, since a write made after the first lapsed comes this close only if both came within it of the lapse.
const SKEW_MS = 1_000;

/**
 * Whether the result a write's key holds (a `done` claim) is the one kept for that write — by it, or
 * by the call it was answered from — and not one another call kept after that result lapsed: kept no
 * later than the write's step ended (within clock skew, at most half the key's TTL, since a later result
 * comes a whole TTL after). A store that does not stamp its results is compared by value.
 *
 * @example
 * ```ts
 * if (held.status === 'done' && heldForWrite(held, write)) await store.markUndone?.(key, ttlMs, held.at);
 * ```
 */
export function heldForWrite(held: { value: unknown; at?: number }, write: UndoneWrite): boolean {
  if (held.at === undefined || write.endedAt === undefined) return sameResult(held.value, write.output);
  return held.at <= write.endedAt + Math.min(SKEW_MS, (write.ttlMs ?? Infinity) / 2);
}
