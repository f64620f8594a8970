// What every chain spec is checked for before its steps' kinds: its own fields, and its step ids.
import type { IssueList } from '../errors/definition-error.js';
import { FORBIDDEN_KEY } from './path.js';
import { isSchema, type Schema as AnySchema } from './schema.js';
import type { ChainSpec, Step } from './spec.js';
import { checkMs } from './tool.js';

const STEP_ID = /^[A-Za-z_][\w-]{0,63}$/;
const RESERVED = new Set(['input', 'context']);

type AnySpec = ChainSpec<AnySchema, AnySchema, unknown>;

/**
 * Checks the chain's own fields (name, version, schemas, output, timeout, keywords, preconditions),
 * every problem added to `issues`.
 *
 * @example
 * ```ts
 * checkChainFields(spec, issues);
 * ```
 */
export function checkChainFields(spec: AnySpec, issues: IssueList): void {
  if (typeof spec.name !== 'string' || !/^[A-Za-z][\w.-]{0,63}$/.test(spec.name)) {
    issues.add('name', `Expected a chain name matching /^[A-Za-z][\\w.-]{0,63}$/, got ${JSON.stringify(spec.name)}.`);
  }
  if (spec.version !== undefined && typeof spec.version !== 'string')
    issues.add('version', 'Expected `version` to be a string.');
  if (!isSchema(spec.input))
    issues.add(
      'input',
      'Expected `input` to be a zod schema or another Standard Schema (use z.object({}) for no input).',
    );
  if (spec.context !== undefined && !isSchema(spec.context))
    issues.add('context', 'Expected `context` to be a zod schema or another Standard Schema.');
  if (spec.output !== undefined && typeof spec.output !== 'function')
    issues.add('output', 'Expected `output` to be a function of the scope.');
  if (spec.timeoutMs !== undefined) checkMs(spec.timeoutMs, 'timeoutMs', 'timeoutMs', issues);
  for (const [field, v] of [
    ['keywords', spec.keywords],
    ['useCases', spec.useCases],
  ] as const) {
    if (v !== undefined && !(Array.isArray(v) && v.every((x) => typeof x === 'string')))
      issues.add(field, `Expected \`${field}\` to be an array of strings.`);
  }
  if (spec.preconditions !== undefined && !Array.isArray(spec.preconditions))
    issues.add('preconditions', 'Expected `preconditions` to be an array of { check, message }.');
  else
    (spec.preconditions ?? []).forEach((p, i) => {
      if (typeof p?.check !== 'function')
        issues.add(`preconditions[${i}].check`, 'Expected `check` to be a function of the scope.');
      if (typeof p?.message !== 'string' || p.message === '')
        issues.add(`preconditions[${i}].message`, 'Expected a non-empty `message` to show the user.');
    });
}

/**
 * Each step's index by id; an id that is malformed, reserved or already used is an issue (and not indexed).
 *
 * @example
 * ```ts
 * const indexById = indexSteps(spec.steps, issues); // Map { 'find' => 0, 'pick' => 1 }
 * ```
 */
export function indexSteps(steps: readonly unknown[], issues: IssueList): Map<string, number> {
  const indexById = new Map<string, number>();
  steps.forEach((step, i) => {
    const id = (step as Step | undefined)?.id;
    const at = `steps[${i}].id`;
    if (typeof id !== 'string' || !STEP_ID.test(id))
      issues.add(at, `Expected a step id matching ${STEP_ID}, got ${JSON.stringify(id)}.`);
    else if (RESERVED.has(id)) issues.add(at, `'${id}' is reserved for ref sources; choose another step id.`);
    else if (id === FORBIDDEN_KEY)
      issues.add(at, `'${id}' cannot be a step id: it names the prototype of the results object; choose another id.`);
    else if (indexById.has(id))
      issues.add(at, `Duplicate step id '${id}' (first used by steps[${indexById.get(id)}]).`);
    else indexById.set(id, i);
  });
  return indexById;
}
