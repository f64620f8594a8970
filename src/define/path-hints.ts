// What to tell the author of a ref whose path does not exist: the fields that do, the index an
// array needs, and, for a select step, which array `from` most likely meant.
import type { Schema } from './schema.js';
import { arrayElement, objectShape, schemaAtPath, schemaKind, type PathSegment } from './path.js';

const dotted = (segments: readonly PathSegment[]): string => segments.join('.');

/**
 * The end of the "path does not exist" message: where the walk stopped and what is there
 * (`(fields of contacts.0: id, name)`, or `'contacts' is an array … did you mean 'contacts.0.id'?`).
 * Empty when the schema cannot tell (a union, `z.any()`).
 */
export function missingPathHint(root: Schema, segments: readonly PathSegment[]): string {
  let schema = root;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    const next = schemaAtPath(schema, [segment]);
    if (next === null) return '';
    if (next !== undefined) {
      schema = next;
      continue;
    }
    const before = segments.slice(0, i);
    if (typeof segment === 'string' && arrayElement(schema)) {
      const fixed = dotted([...before, 0, ...segments.slice(i)]);
      return before.length
        ? `: '${dotted(before)}' is an array, so an index comes next; did you mean '${fixed}'?`
        : `: it is an array, so the path starts with an index; did you mean '${fixed}'?`;
    }
    const shape = objectShape(schema);
    if (shape)
      return ` (fields${before.length ? ` of ${dotted(before)}` : ''}: ${Object.keys(shape).join(', ') || 'none'})`;
    const kind = schemaKind(schema);
    return before.length && kind !== 'unknown' ? `: '${dotted(before)}' is a ${kind}` : '';
  }
  return '';
}

/**
 * The array a select step's `from` most likely meant, when it names no array: the only array of
 * objects in the source (3 levels deep at most), or the only one whose items have every `where`
 * field. Its items let the `where` fields still be checked.
 */
export function likelyArray(
  root: Schema,
  whereFields: readonly string[],
): { path: string; element: Schema } | undefined {
  const found: { path: string; element: Schema; fields: Record<string, Schema> }[] = [];
  const walk = (schema: Schema, at: PathSegment[], depth: number): void => {
    const element = arrayElement(schema);
    const fields = element && objectShape(element);
    if (element && fields) found.push({ path: dotted(at), element, fields });
    const shape = objectShape(schema);
    if (!shape || depth === 3) return;
    for (const key of Object.keys(shape)) walk(shape[key]!, [...at, key], depth + 1);
  };
  walk(root, [], 0);
  const fitting = found.filter((f) => whereFields.every((w) => Object.hasOwn(f.fields, w)));
  const pick = fitting.length === 1 ? fitting[0] : found.length === 1 ? found[0] : undefined;
  return pick && { path: pick.path, element: pick.element };
}
