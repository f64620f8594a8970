// What a failure undoes inside sub-chains that finished in an earlier segment (before a gate, a
// wait or a crash): not run again, their steps are known only from the journal or checkpoint
// (`priorNested`), so their undo units are rebuilt from it — each completed step with `compensate`,
// with the scope its sub-chain had (its input rebuilt by the same mapping, its results from the entries).
import type { Chain } from '../define/chain.js';
import type { ItemScope } from '../define/spec.js';
import { parseSchema } from '../define/schema.js';
import type { Scope } from '../define/ref.js';
import type { PlannedStep } from '../define/step-kinds.js';
import type { TraceStep } from '../observe/trace.js';
import type { UndoUnit } from './compensate.js';
import type { Execution } from './execution.js';
import { priorUnits } from './sub-run.js';
import { nullRecord } from '../util/record.js';

/**
 * The undo units inside step `key` (a `chain`, `forEach`, `branch` or `loop` step) of what an
 * earlier segment finished, oldest first: each sub-chain's steps in plan order, deeper ones first.
 * A step done in that segment gives its finished items or iterations (a collected failure is left
 * out: it was undone as it failed); with `partial`, a step that had not finished there (parked at a
 * gate or a wait inside it, or in flight at a crash) also gives the steps its unfinished items,
 * iterations or sub-chain had completed.
 *
 * @example
 * ```ts
 * const units = priorStepUndo(exec, step, 'done', scope); // done/0/save, done/1/save, …
 * ```
 */
export function priorStepUndo(
  exec: Execution,
  step: PlannedStep,
  key: string,
  scope: Scope,
  partial = false,
): UndoUnit[] {
  const calls = step.calls;
  if (!calls || exec.priorNested === undefined) return [];
  if (step.forEach || step.loop) {
    const out: UndoUnit[] = [];
    for (const n of priorIndexes(exec, step, key, 0, partial)) out.push(...priorUnitUndo(exec, step, key, n, scope));
    return out;
  }
  let index = 0;
  if (step.branch) {
    // The case is `on` again (a function of the same scope); no case and no default ran nothing.
    const { on, names, hasDefault } = step.branch;
    const value = inputOf(on, scope);
    index = typeof value === 'string' ? names.indexOf(value) : -1;
    if (index < 0) {
      if (!hasDefault) return [];
      index = names.length;
    }
  }
  const call = calls[index]!;
  return priorRunUndo(exec, call.chain as Chain, key, inputOf(call.resolveInput, scope), scope);
}

/**
 * The items (iterations) of step `key`, from index `from`, whose earlier-segment work a failure
 * undoes, in order: those that finished ok and, with `partial`, those that had not finished but
 * completed steps. A collected failure (`{ ok: false }`) undid its own steps as it failed.
 *
 * @example
 * ```ts
 * for (const n of priorIndexes(exec, step, 'done', 3, true))
 *   units.push(...priorUnitUndo(exec, step, 'done', n, scope));
 * ```
 */
export function priorIndexes(
  exec: Execution,
  step: PlannedStep,
  key: string,
  from: number,
  partial: boolean,
): number[] {
  const units = priorUnits(exec, key);
  const collect = step.forEach?.collect === true;
  const out = new Set<number>();
  for (const [n, unit] of units ?? []) {
    if (n < from) continue;
    if (collect && (unit.value as { ok?: unknown } | undefined)?.ok === false) continue;
    out.add(n);
  }
  if (partial && exec.priorNested !== undefined) {
    // An unfinished item's steps are filed under `key/n` (no unit `key/n` of its own).
    const head = `${key}/`;
    for (const prefix of exec.priorNested.keys()) {
      if (!prefix.startsWith(head)) continue;
      // `key/n` itself, or deeper (`key/n/inner`: a step running chains inside item n).
      const slash = prefix.indexOf('/', head.length);
      const rest = prefix.slice(head.length, slash < 0 ? undefined : slash);
      if (!/^\d+$/.test(rest)) continue;
      const n = Number(rest);
      if (n >= from && !units?.has(n)) out.add(n);
    }
  }
  return [...out].sort((a, b) => a - b);
}

/**
 * The undo units of one sub-chain run `prefix` that finished earlier: rebuilt from its journaled
 * steps, with its input parsed as when it ran.
 *
 * @example
 * ```ts
 * const units = priorUnitUndo(exec, step, 'done', 3, scope); // item 3's
 * ```
 */
export function priorUnitUndo(exec: Execution, step: PlannedStep, key: string, n: number, scope: Scope): UndoUnit[] {
  const call = step.calls![0]!;
  const items = step.forEach ? inputOf((s) => step.forEach!.over.resolve(s), scope) : undefined;
  const unitScope: Scope | ItemScope = Array.isArray(items) ? { ...scope, item: items[n] } : scope;
  return priorRunUndo(exec, call.chain as Chain, `${key}/${n}`, inputOf(call.resolveInput, unitScope), scope);
}

/**
 * A mapping applied again to rebuild a sub-chain's input; one that throws now leaves the input unknown (the undos still
 * use the results).
 */
function inputOf(resolve: (scope: Scope) => unknown, scope: Scope): unknown {
  try {
    return resolve(scope);
  } catch {
    return undefined;
  }
}

/**
 * The undo units of the sub-chain run `prefix` from its entries of an earlier segment: its completed
 * steps with `compensate` in plan order, each after what its own sub-chains completed.
 *
 * @example
 * ```ts
 * const units = priorRunUndo(exec, saveOne, 'done/3', { id: 't3' }, scope);
 * ```
 */
function priorRunUndo(exec: Execution, chain: Chain, prefix: string, rawInput: unknown, parent: Scope): UndoUnit[] {
  const entries = exec.priorNested?.get(prefix) ?? [];
  if (entries.length === 0 && !filedBelow(exec, prefix)) return [];
  const done = new Set<string>();
  const generations = new Map<string, number>();
  const ran = new Map<string, TraceStep | undefined>();
  for (const e of entries) {
    done.add(e.step.slice(prefix.length + 1));
    if (e.generation !== undefined) generations.set(e.step, e.generation);
    ran.set(e.step, e.trace);
  }
  const scope = priorScope(exec, chain, prefix, rawInput, parent);
  const { results } = scope;
  const units: UndoUnit[] = [];
  for (const step of chain.plan) {
    const id = `${prefix}/${step.id}`;
    // A step running chains that had not finished (the one parked at a gate or wait, or in flight): what its chains
    // completed.
    if (!done.has(step.id)) {
      if (step.calls) units.push(...priorStepUndo(exec, step, id, scope, true));
      continue;
    }
    if (step.calls) units.push(...priorStepUndo(exec, step, id, scope));
    if (step.compensate && step.id in results)
      units.push({ step, id, scope, generation: generations.get(id), ran: ran.get(id) });
  }
  return units;
}

/**
 * The scope the sub-chain run `prefix` of an earlier segment had: its input (`rawInput`, rebuilt by
 * its mapping) parsed as when it ran, the context, its results from its journaled steps.
 *
 * @example
 * ```ts
 * const scope = priorScope(exec, saveOne, 'done/3', { id: 't3' }, parentScope);
 * ```
 */
export function priorScope(exec: Execution, chain: Chain, prefix: string, rawInput: unknown, parent: Scope): Scope {
  const input = parseSchema(chain.input, rawInput);
  let context = parent.context as unknown;
  if (chain.context) {
    const ctx = parseSchema(chain.context, context);
    if (ctx.success) context = ctx.data;
  }
  const results = nullRecord<unknown>();
  for (const e of exec.priorNested?.get(prefix) ?? [])
    if (e.skipped !== true) results[e.step.slice(prefix.length + 1)] = e.value;
  return { input: input.success ? input.data : rawInput, context, results };
}

/** Whether steps deeper than `prefix`'s own (`prefix/inner/0/save`) were filed from an earlier segment. */
function filedBelow(exec: Execution, prefix: string): boolean {
  const head = `${prefix}/`;
  for (const key of exec.priorNested?.keys() ?? []) if (key.startsWith(head)) return true;
  return false;
}
