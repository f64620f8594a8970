// Schemas, checked structurally: any zod 4 copy (classic or zod/mini) by its `_zod` internals, or any Standard Schema.
import { safeParse as zodSafeParse, toJSONSchema as zodToJSONSchema, type $ZodType } from 'zod/v4/core';

/**
 * The Standard Schema v1 interface (https://standardschema.dev), copied as its spec asks so no
 * package is needed. zod 4, valibot and arktype schemas all satisfy it.
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly '~standard': StandardSchemaV1.Props<Input, Output>;
}

/** The types of {@link StandardSchemaV1}. */
export declare namespace StandardSchemaV1 {
  /** What a Standard Schema exposes under `~standard`. */
  export interface Props<Input = unknown, Output = Input> {
    readonly version: 1;
    readonly vendor: string;
    /** Validates a value: its output, or the issues found (sync or async). */
    readonly validate: (
      value: unknown,
      options?: { readonly libraryOptions?: Record<string, unknown> | undefined } | undefined,
    ) => Result<Output> | Promise<Result<Output>>;
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
  }
  /** What `validate` returns. */
  export type Result<Output> =
    { readonly value: Output; readonly issues?: undefined } | { readonly issues: ReadonlyArray<Issue> };
  /** One validation problem. */
  export interface Issue {
    readonly message: string;
    readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
  }
}

/**
 * A schema chainkit accepts for tool and chain input/output: a zod 4 schema from any copy of zod 4
 * (classic `zod` or `zod/mini`), or any other Standard Schema validator (valibot, arktype, …).
 * `O` is what it outputs (the parsed value), `I` what it accepts.
 *
 * Static ref-path checks in `defineChain` apply where the schema can be introspected (zod);
 * for other Standard Schemas they are skipped and only run-time validation applies.
 */
export type Schema<O = unknown, I = O> = StandardSchemaV1<I, O>;

/**
 * What a schema outputs: zod's `z.output`, or a Standard Schema's output type.
 *
 * @example
 * ```ts
 * type T = SchemaOutput<typeof Task>; // { task_id: string; title: string }
 * ```
 */
export type SchemaOutput<S> = S extends { readonly _zod: { readonly output: infer O } }
  ? O
  : S extends { readonly '~standard': { readonly types?: infer T } }
    ? NonNullable<T> extends { readonly output: infer O }
      ? O
      : unknown
    : unknown;

/**
 * What a schema accepts: zod's `z.input`, or a Standard Schema's input type.
 *
 * @example
 * ```ts
 * type T = SchemaInput<typeof Options>; // fields with a .default() are optional
 * ```
 */
export type SchemaInput<S> = S extends { readonly _zod: { readonly input: infer I } }
  ? I
  : S extends { readonly '~standard': { readonly types?: infer T } }
    ? NonNullable<T> extends { readonly input: infer I }
      ? I
      : unknown
    : unknown;

/**
 * One problem a schema found in a value (zod, zod/mini or any Standard Schema): the path into the value and a message.
 */
export interface SchemaIssue {
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

/** The outcome of {@link parseSchema}, shaped like zod's `safeParse` result. */
export type ParseResult<T> =
  | { readonly success: true; readonly data: T; readonly error?: undefined }
  | { readonly success: false; readonly data?: undefined; readonly error: { readonly issues: readonly SchemaIssue[] } };

/** True for zod 4 schemas of any copy (classic or mini): they carry their definition under `_zod`. */
export function isZodSchema(value: unknown): value is $ZodType {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return false;
  const internals = (value as { _zod?: { def?: unknown; run?: unknown } })._zod;
  return (
    typeof internals === 'object' &&
    internals !== null &&
    typeof internals.def === 'object' &&
    typeof internals.run === 'function'
  );
}

/**
 * True for a schema chainkit can validate with: a zod 4 schema (any copy, classic or mini) or a
 * Standard Schema v1. Checked by shape, never `instanceof`, so the user's own zod copy is accepted.
 *
 * @example
 * ```ts
 * isSchema(z.object({})); // true
 * isSchema({ type: 'object' }); // false: JSON Schema is not a validator
 * ```
 */
export function isSchema(value: unknown): value is Schema {
  if (isZodSchema(value)) return true;
  // arktype types are functions
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return false;
  const std = (value as { '~standard'?: { version?: unknown; validate?: unknown } })['~standard'];
  return typeof std === 'object' && std !== null && std.version === 1 && typeof std.validate === 'function';
}

const ASYNC_ISSUES: readonly SchemaIssue[] = Object.freeze([
  Object.freeze({
    path: Object.freeze([]) as readonly PropertyKey[],
    message: 'the schema validates asynchronously, which chainkit does not support',
  }),
]);
const ignore = (): void => {};

/**
 * Validates `value` against `schema` (synchronously, like zod's `safeParse`): zod schemas through
 * zod's core `safeParse` (the same call `schema.safeParse` makes, so it costs the same), other
 * Standard Schemas through `~standard.validate`.
 *
 * @example
 * ```ts
 * const r = parseSchema(z.object({ n: z.number() }), { n: 1 });
 * if (r.success) r.data.n;
 * ```
 */
export function parseSchema<T>(schema: Schema<T, any>, value: unknown): ParseResult<T> {
  if ((schema as { _zod?: unknown })._zod !== undefined)
    return zodSafeParse(schema as unknown as $ZodType<T>, value) as ParseResult<T>;
  const result = schema['~standard'].validate(value);
  if (typeof (result as Promise<unknown>).then === 'function') {
    (result as Promise<unknown>).then(ignore, ignore); // its outcome is unused: never an unhandled rejection
    return { success: false, error: { issues: ASYNC_ISSUES } };
  }
  const r = result as StandardSchemaV1.Result<T>;
  if (r.issues === undefined) return { success: true, data: r.value };
  return { success: false, error: { issues: r.issues.map(standardIssue) } };
}

function standardIssue(issue: StandardSchemaV1.Issue): SchemaIssue {
  const path = (issue.path ?? []).map((p) => (typeof p === 'object' && p !== null ? p.key : p));
  return { path, message: String(issue.message) };
}

/**
 * The JSON Schema of a schema (`io: 'input'` describes what it accepts). zod schemas (any copy)
 * go through zod's core `toJSONSchema`; a Standard Schema through its `~standard.jsonSchema`
 * (Standard JSON Schema) when it has one. A schema that exposes none gives `{}` (any value),
 * so models see an unconstrained object: give such tools a zod schema or a validator that
 * implements Standard JSON Schema.
 *
 * @example
 * ```ts
 * schemaToJSONSchema(z.object({ city: z.string() })); // { type: 'object', properties: { city: … }, … }
 * ```
 */
export function schemaToJSONSchema(schema: Schema, io: 'input' | 'output' = 'input'): Record<string, unknown> {
  if (isZodSchema(schema)) return zodToJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  const json = (
    schema['~standard'] as { jsonSchema?: Partial<Record<'input' | 'output', (o: { target: string }) => unknown>> }
  ).jsonSchema;
  const fn = json?.[io];
  if (typeof fn === 'function') {
    const out = fn({ target: 'draft-2020-12' });
    if (typeof out === 'object' && out !== null) return out as Record<string, unknown>;
  }
  return {};
}
