// A write's key after its undo: the store keeps a record saying so in place of the result taken back,
// and a later call with the key runs again under its next generation (`key#1`, `key#2`…).
import type { CallContext } from './types.js';

/**
 * What the store keeps under a write's key once its undo succeeded, in place of its result: a later
 * call with the key is not answered with a result taken back, but runs again under the key's next
 * generation (`key#1`, then `key#2`…), a key of its own for the store and for the tool.
 */
const UNDONE_FIELD = '~chainkit/undone';
export const UNDONE: Readonly<Record<string, unknown>> = Object.freeze({ [UNDONE_FIELD]: true });

/** Whether a kept value is the record of an undone write. */
export function isUndone(value: unknown): boolean {
  return typeof value === 'object' && value !== null && Object.hasOwn(value, UNDONE_FIELD);
}

/** A key at generation `g`: the key itself, then `key#1`, `key#2`… each after the one before was undone. */
export function generationKey(key: string, g: number): string {
  return g === 0 ? key : `${key}#${g}`;
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
