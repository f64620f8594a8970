// What a failure undoes inside sub-chains that finished in an earlier segment (before a gate, a
// wait or a crash): not run again, their steps are known only from the journal or checkpoint
// (`priorNested`), so their undo units are rebuilt from it — each completed step with `compensate`,
// with the scope its sub-chain had (its input rebuilt by the same mapping, its results from the entries).
import type { Chain } from '../define/chain.js';
import type { ItemScope } from '../define/spec.js';
import { parseSchema } from '../define/schema.js';
import type { Scope } from '../define/ref.js';
import type { PlannedStep } from '../define/step-kinds.js';
import type { UndoUnit } from './compensate.js';
import type { JournalEntry } from '../stores/run-store.js';
import type { Execution } from './execution.js';
import { priorUnits } from './sub-run.js';

/**
 * The undo units inside step `key` (a `chain`, `forEach`, `branch` or `loop` step done in an
 * earlier segment), oldest first: each sub-chain's steps in plan order, deeper ones first.
 *
 * @example
 * ```ts
 * const units = priorStepUndo(exec, step, 'done', scope); // done/0/save, done/1/save, …
 * ```
 */
export function priorStepUndo(exec: Execution, step: PlannedStep, key: string, scope: Scope): UndoUnit[] {
  const calls = step.calls;
  if (!calls || exec.priorNested === undefined) return [];
  if (step.forEach || step.loop) {
    const units = priorUnits(exec, key);
    if (!units) return [];
    const out: UndoUnit[] = [];
    for (const n of [...units.keys()].sort((a, b) => a - b))
      out.push(...priorUnitUndo(exec, step, key, n, units.get(n)!, scope));
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
 * The undo units of unit `n` (a `forEach` item, a `loop` iteration) of step `key`, finished in an
 * earlier segment: rebuilt from its journaled steps, with its input parsed as when it ran.
 *
 * @example
 * ```ts
 * const units = priorUnitUndo(exec, step, 'done', 3, entry, scope); // item 3's
 * ```
 */
export function priorUnitUndo(
  exec: Execution,
  step: PlannedStep,
  key: string,
  n: number,
  entry: JournalEntry,
  scope: Scope,
): UndoUnit[] {
  // A collected item that failed undid its own completed steps when it failed: nothing is left to undo.
  if (step.forEach?.collect && (entry.value as { ok?: unknown } | undefined)?.ok !== true) return [];
  const call = step.calls![0]!;
  const items = step.forEach ? inputOf((s) => step.forEach!.over.resolve(s), scope) : undefined;
  const unitScope: Scope | ItemScope = Array.isArray(items) ? { ...scope, item: items[n] } : scope;
  return priorRunUndo(exec, call.chain as Chain, `${key}/${n}`, inputOf(call.resolveInput, unitScope), scope);
}

/** A mapping applied again to rebuild a sub-chain's input; one that throws now leaves the input unknown (the undos still use the results). */
function inputOf(resolve: (scope: Scope) => unknown, scope: Scope): unknown {
  try {
    return resolve(scope);
  } catch {
    return undefined;
  }
}

function priorRunUndo(exec: Execution, chain: Chain, prefix: string, rawInput: unknown, parent: Scope): UndoUnit[] {
  const entries = exec.priorNested?.get(prefix);
  if (!entries || entries.length === 0) return [];
  const input = parseSchema(chain.input, rawInput);
  let context = parent.context as unknown;
  if (chain.context) {
    const ctx = parseSchema(chain.context, context);
    if (ctx.success) context = ctx.data;
  }
  const results = Object.create(null) as Record<string, unknown>;
  const done = new Set<string>();
  const start = prefix.length + 1;
  for (const e of entries) {
    const id = e.step.slice(start);
    done.add(id);
    if (e.skipped !== true) results[id] = e.value;
  }
  const scope: Scope = { input: input.success ? input.data : rawInput, context, results };
  const units: UndoUnit[] = [];
  for (const step of chain.plan) {
    if (!done.has(step.id)) continue;
    const id = `${prefix}/${step.id}`;
    if (step.calls) units.push(...priorStepUndo(exec, step, id, scope));
    if (step.compensate && step.id in results) units.push({ step, id, scope });
  }
  return units;
}
