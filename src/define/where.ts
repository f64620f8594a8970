// Select steps' field matchers (`where: { title: { contains: ref('input', 'match') } }`): checks and compilation.
import type { Schema } from './schema.js';
import type { IssueList } from '../errors/definition-error.js';
import type { FieldMatcher } from './step-common.js';
import { isPlainObject, literalProblem, type Resolver } from './mapping.js';
import { FORBIDDEN_KEY, objectShape, ownEntry } from './path.js';
import { isRef, type Ref, type Scope } from './ref.js';

type Op = 'equals' | 'contains' | 'in';
const lower = (v: unknown): string => String(v).toLowerCase();

/**
 * Checks a field-matcher object and compiles it into a per-run item predicate. Fields are matched
 * against items' own properties only: an item without `constructor` does not match Object.
 */
export function compileWhere(
  where: Record<string, FieldMatcher>,
  at: string,
  element: Schema | null | undefined,
  issues: IssueList,
  refs: Ref[],
  checkRef: (r: Ref, at: string) => unknown,
): (scope: Scope) => (item: unknown) => boolean {
  const shape = element ? objectShape(element) : undefined;
  const tests: { field: string; op: Op; value: Resolver }[] = [];
  for (const field of Object.keys(where)) {
    const fieldAt = `${at}.${field}`;
    if (field === FORBIDDEN_KEY) {
      issues.add(fieldAt, `'${FORBIDDEN_KEY}' cannot be a \`where\` field: it names the prototype, not data.`);
      continue;
    }
    const m = where[field];
    if (shape && !ownEntry(shape, field))
      issues.add(
        fieldAt,
        `'${field}' is not a field of the selected items (fields: ${Object.keys(shape).join(', ')}).`,
      );
    if (!isPlainObject(m)) {
      issues.add(fieldAt, 'Expected a matcher { equals } | { contains } | { in }.');
      continue;
    }
    const keys = Object.keys(m);
    const ops = keys.filter((k): k is Op => k === 'equals' || k === 'contains' || k === 'in');
    if (ops.length === 0 || ops.length < keys.length)
      issues.add(fieldAt, `Expected one of equals, contains, in; got ${keys.join(', ') || 'nothing'}.`);
    for (const op of ops) {
      const v = m[op];
      if (isRef(v)) {
        refs.push(v);
        checkRef(v, `${fieldAt}.${op}`);
      } else {
        const problem = literalProblem(v, `${fieldAt}.${op}`);
        if (problem) issues.add(problem.path, problem.message);
      }
      tests.push({ field, op, value: isRef(v) ? (s) => v.resolve(s) : () => v });
    }
  }
  return (scope) => {
    const resolved = tests.map((t) => {
      const v = t.value(scope);
      if (t.op === 'contains') {
        const needle = lower(v);
        return (x: unknown) => typeof x === 'string' && x.toLowerCase().includes(needle);
      }
      if (t.op === 'in') {
        const set = new Set(Array.isArray(v) ? v : [v]);
        return (x: unknown) => set.has(x);
      }
      return (x: unknown) => x === v;
    });
    return (item) => {
      if (typeof item !== 'object' || item === null) return false;
      for (let i = 0; i < tests.length; i++) {
        const field = tests[i]!.field;
        if (!resolved[i]!(Object.hasOwn(item, field) ? (item as Record<string, unknown>)[field] : undefined))
          return false;
      }
      return true;
    };
  };
}
