// Static validation of a chain (docs/guides/quickstart.md, Chains) and its compilation into a plan: deps,
// resolvers, fingerprint.
// Each step's kind is checked by its planner (define/step-kinds.ts); this file checks what every kind shares.
import type { IssueList } from '../errors/definition-error.js';
import type { ChainSpec, Step } from './spec.js';
import { compileMapping, containsRef, isPlainObject, literalProblem, show, type Resolver } from './mapping.js';
import { objectShape, ownEntry, schemaAtPath, schemaKind } from './path.js';
import { missingPathHint } from './path-hints.js';
import { isRef, type Ref } from './ref.js';
import { isSchema, parseSchema, type Schema as AnySchema } from './schema.js';
import { checkMs, checkRetry, isTool } from './tool.js';
import { type KindPlan, type OutputSchema, type PlanContext, type StepPlanner } from './kinds/plan.js';
import { STEP_PLANNERS, type PlannedStep, type StepKind } from './step-kinds.js';
import { fingerprintOf } from './fingerprint.js';
import { checkChainFields, indexSteps } from './chain-fields.js';

// Outside a forEach input, `ref('item')` is an ordinary step ref.
const NO_ITEM = Symbol('no item');

const KINDS = Object.keys(STEP_PLANNERS) as StepKind[];
// "`tool`, `select` or `compute`": the kinds as the one-kind-per-step message lists them.
const KIND_LIST = KINDS.map((k) => `\`${k}\``)
  .join(', ')
  .replace(/, ([^,]*)$/, ' or $1');
// The table's planners, each typed for its own spec and fields, as the loop calls them.
type AnyPlanner = StepPlanner<Step, Partial<PlannedStep>>;

type AnySpec = ChainSpec<AnySchema, AnySchema, unknown>;
type Schema = OutputSchema;

/** Validates a chain spec, adding every problem to `issues`, and compiles its plan. */
export function compilePlan(spec: AnySpec, issues: IssueList): { plan: PlannedStep[]; fingerprint: string } {
  checkChainFields(spec, issues);
  if (!Array.isArray(spec.steps) || spec.steps.length === 0) {
    issues.add('steps', 'Expected a non-empty array of steps.');
    return { plan: [], fingerprint: '' };
  }

  const inputSchema = isSchema(spec.input) ? spec.input : null;
  const contextSchema = isSchema(spec.context) ? spec.context : undefined;
  const indexById = indexSteps(spec.steps, issues);

  const outputs: Schema[] = [];
  const plan: PlannedStep[] = [];

  const checkRef = (r: Ref, at: string, stepIndex: number, allowSelf = false): Schema => {
    let root: Schema;
    let what: string;
    if (r.source === 'item' && currentItem !== NO_ITEM) {
      root = currentItem;
      what = 'the forEach item';
    } else if (r.source === 'input') {
      root = inputSchema;
      what = 'the chain input';
    } else if (r.source === 'context') {
      if (!contextSchema) {
        issues.add(at, "ref('context', …) used but the chain declares no `context` schema.");
        return null;
      }
      root = contextSchema;
      what = 'the chain context';
    } else {
      const idx = indexById.get(r.source);
      if (idx === undefined) {
        issues.add(at, `ref to unknown step '${r.source}'.`);
        return null;
      }
      if (idx > stepIndex || (idx === stepIndex && !allowSelf)) {
        issues.add(at, `ref to step '${r.source}', which does not come before this step.`);
        return null;
      }
      root = outputs[idx];
      const tool = plan[idx]?.tool;
      what = `the output of step '${r.source}'${tool ? ` (tool ${tool.name})` : ''}`;
    }
    if (!root || r.segments.length === 0) return root;
    const found = schemaAtPath(root, r.segments);
    if (found === undefined) {
      const hint = missingPathHint(root, r.segments);
      issues.add(at, `path '${r.path}' does not exist in ${what}${hint}${hint.endsWith('?') ? '' : '.'}`);
    }
    return found;
  };

  const checkMapping = (
    mapping: Record<string, unknown>,
    target: AnySchema,
    at: string,
    stepIndex: number,
    allowSelf: boolean,
    toolName: string,
  ): void => {
    const shape = objectShape(target, 'in');
    if (!shape) {
      // A target that cannot be introspected (another Standard Schema, a union): its fields go
      // unchecked (run-time validation still applies), the refs into it are still checked.
      for (const key of Object.keys(mapping))
        containsRef(mapping[key], (r) => checkRef(r, `${at}.${key}`, stepIndex, allowSelf));
      return;
    }
    for (const key of Object.keys(mapping)) {
      const value = mapping[key];
      const field = ownEntry(shape, key);
      const fieldAt = `${at}.${key}`;
      if (!field) {
        issues.add(
          fieldAt,
          `'${key}' is not a field of ${toolName}'s input (fields: ${Object.keys(shape).join(', ') || 'none'}).`,
        );
        continue;
      }
      if (isRef(value)) {
        const source = checkRef(value, fieldAt, stepIndex, allowSelf);
        if (source && !value.transformFn) {
          const from = schemaKind(source);
          const to = schemaKind(field, 'in');
          if (from !== 'unknown' && to !== 'unknown' && from !== 'null' && from !== to) {
            issues.add(
              fieldAt,
              `ref ${value} is a ${from} but '${key}' expects a ${to}; add .transform(...) to convert it.`,
            );
          }
        }
      } else if (typeof value === 'function') {
        issues.add(
          fieldAt,
          'field values are literals or refs; to compute values, make the whole `input` a function of the scope.',
        );
      } else if (isPlainObject(value) && objectShape(field, 'in')) {
        checkMapping(value, field, fieldAt, stepIndex, allowSelf, toolName);
      } else if (!containsRef(value, (r) => checkRef(r, fieldAt, stepIndex, allowSelf))) {
        const parsed = parseSchema(field, value);
        if (!parsed.success)
          issues.add(
            fieldAt,
            `literal ${show(value)} does not match the field: ${parsed.error.issues[0]?.message ?? 'invalid'}.`,
          );
      }
    }
    for (const key of Object.keys(shape)) {
      if (!Object.hasOwn(mapping, key) && !parseSchema(shape[key]!, undefined).success) {
        issues.add(`${at}.${key}`, `required field '${key}' of ${toolName}'s input is not mapped.`);
      }
    }
  };

  // A mapping is checked as a literal first (cycles, depth, `__proto__`): the walks below recurse.
  const mappingResolver = (
    mapping: Record<string, unknown>,
    target: AnySchema,
    at: string,
    stepIndex: number,
    allowSelf: boolean,
    toolName: string,
    refs: Ref[],
  ): Resolver => {
    const problem = literalProblem(mapping, at);
    if (problem) {
      issues.add(problem.path, problem.message);
      return () => undefined;
    }
    checkMapping(mapping, target, at, stepIndex, allowSelf, toolName);
    const compiled = compileMapping(mapping, refs);
    return compiled.constant ? () => compiled.value : compiled.fn;
  };
  // The element schema `ref('item', …)` reads inside a forEach input (see withItem).
  let currentItem: Schema | typeof NO_ITEM = NO_ITEM;
  const withItem = <T>(element: Schema, fn: () => T): T => {
    const outer = currentItem;
    currentItem = element;
    try {
      return fn();
    } finally {
      currentItem = outer;
    }
  };
  const ctx: PlanContext = {
    issues,
    checkRef,
    mappingResolver,
    chainName: typeof spec.name === 'string' ? spec.name : '',
    withItem,
  };
  // Earlier steps no later step waits for yet, ascending (a Set keeps insertion order).
  const frontier = new Set<number>();
  let barrier = -1; // the last sleep or waitFor step

  spec.steps.forEach((raw, i) => {
    const at = `steps[${i}]`;
    const step = (raw ?? {}) as Step & Record<StepKind, unknown>;
    const kinds = KINDS.filter((k) => step[k] !== undefined);
    const id = typeof step.id === 'string' ? step.id : `#${i}`;
    const refs: Ref[] = [];
    let usesScope = false;
    let planned: Partial<PlannedStep> = {};

    if (kinds.length !== 1) {
      issues.add(at, `A step needs exactly one of ${KIND_LIST}; got ${kinds.length ? kinds.join(' and ') : 'none'}.`);
      outputs.push(null);
    } else {
      const kind: KindPlan<Partial<PlannedStep>> = (STEP_PLANNERS[kinds[0]!] as AnyPlanner).plan(
        step,
        at,
        i,
        ctx,
        refs,
      );
      outputs.push(kind.output);
      usesScope = kind.usesScope;
      if (kind.fields) planned = kind.fields;
    }

    if (step.when !== undefined && typeof step.when !== 'function')
      issues.add(`${at}.when`, 'Expected `when` to be a function of the scope returning a boolean.');
    if (step.idempotencyKey !== undefined && typeof step.idempotencyKey !== 'function')
      issues.add(`${at}.idempotencyKey`, 'Expected `idempotencyKey` to be a function of the scope returning a string.');
    if (step.timeoutMs !== undefined) checkMs(step.timeoutMs, `${at}.timeoutMs`, 'timeoutMs', issues);
    checkRetry(step.retry, `${at}.retry`, issues);
    if (step.confirm !== undefined && step.confirm !== false) {
      const c = step.confirm as { prompt?: unknown; details?: unknown };
      if (typeof c !== 'object' || c === null || (typeof c.prompt !== 'string' && typeof c.prompt !== 'function')) {
        issues.add(`${at}.confirm`, 'Expected `confirm` to be { prompt: string | (scope) => string } or false.');
      } else if (c.details !== undefined && typeof c.details !== 'function') {
        issues.add(`${at}.confirm.details`, 'Expected `details` to be a function of the scope.');
      }
    }
    if (step.compensate !== undefined) {
      const comp = step.compensate;
      if (!isTool(comp?.tool)) issues.add(`${at}.compensate.tool`, 'Expected a tool made by defineTool().');
      else if (typeof comp.input === 'function')
        planned = { ...planned, compensate: { tool: comp.tool, resolveInput: comp.input as Resolver } };
      else if (isPlainObject(comp.input)) {
        // Runs after the step: its refs add no dependencies.
        planned = {
          ...planned,
          compensate: {
            tool: comp.tool,
            resolveInput: mappingResolver(
              comp.input,
              comp.tool.input,
              `${at}.compensate.input`,
              i,
              true,
              comp.tool.name,
              [],
            ),
          },
        };
      } else
        issues.add(`${at}.compensate.input`, 'Expected an object of literals and refs, or a function of the scope.');
    }
    const confirm = step.confirm as { prompt?: unknown; details?: unknown } | false | undefined;
    if (
      typeof step.when === 'function' ||
      typeof step.idempotencyKey === 'function' ||
      (typeof confirm === 'object' &&
        confirm !== null &&
        (typeof confirm.prompt === 'function' || typeof confirm.details === 'function'))
    )
      usesScope = true;

    // Refs name their own deps. Functions may read any earlier result, so they wait for every earlier
    // step: waiting for the frontier is the same, since every earlier step is one a frontier step
    // (transitively) waits for, and a step only starts once its deps are done. Listing every earlier
    // step instead made plans (and compiling them) quadratic in the number of steps.
    let deps: number[];
    if (usesScope) deps = [...frontier];
    else {
      const own = new Set<number>();
      for (const r of refs) {
        const d = indexById.get(r.source);
        if (d !== undefined && d < i) own.add(d);
      }
      deps = [...own].sort((a, b) => a - b);
    }
    // A sleep or a waitFor is a barrier (§12): it waits for every earlier step, every later one waits for it.
    const kind = kinds[0] ?? 'compute';
    if (kind === 'sleep' || kind === 'waitFor') deps = [...frontier].sort((a, b) => a - b);
    else if (barrier >= 0 && !deps.includes(barrier)) deps = [...deps, barrier].sort((a, b) => a - b);
    if (kind === 'sleep' || kind === 'waitFor') barrier = i;
    for (const d of deps) frontier.delete(d);
    frontier.add(i);
    plan.push(
      Object.freeze({
        index: i,
        id,
        kind: kinds[0] ?? 'compute',
        step: raw as Step,
        deps: Object.freeze(deps),
        ...planned,
      }) as PlannedStep,
    );
  });

  let fingerprint = '';
  try {
    fingerprint = fingerprintOf(spec);
  } catch (error) {
    // e.g. a structure too deep to serialize hung somewhere on a step.
    issues.add(
      'steps',
      `The chain could not be fingerprinted (${error instanceof Error ? error.message : 'unreadable value'}); ` +
        'keep step definitions to shallow, plain data.',
    );
  }
  return { plan, fingerprint };
}
