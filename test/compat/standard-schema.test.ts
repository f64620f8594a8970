// Any Standard Schema validator (valibot, arktype, …) for tool and chain schemas: run-time validation and JSON Schema.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createToolRegistry,
  defineChain,
  defineTool,
  functionInvoker,
  ref,
  runChain,
  type StandardSchemaV1,
  type ToolInput,
  type ToolOutput,
} from 'chainkit';
import { isSchema, parseSchema, schemaToJSONSchema } from '../../src/define/schema.js';

type Check<T> = (value: unknown) => T | { at: PropertyKey[]; message: string };

/** A minimal hand-written Standard Schema v1 (valibot is not installed): `check` returns the value or an issue. */
function standard<T>(check: Check<T>, jsonSchema?: Record<string, unknown>): StandardSchemaV1<T, T> {
  const props = {
    version: 1 as const,
    vendor: 'test',
    validate: (value: unknown): StandardSchemaV1.Result<T> => {
      const r = check(value);
      if (typeof r === 'object' && r !== null && 'message' in r && 'at' in r) {
        // Path segments in both forms the spec allows: a key, or { key }.
        return { issues: [{ message: r.message, path: r.at.map((k, i) => (i % 2 ? { key: k } : k)) }] };
      }
      return { value: r as T };
    },
    ...(jsonSchema && { jsonSchema: { input: () => jsonSchema, output: () => jsonSchema } }),
  };
  return { '~standard': props };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const Query = standard<{ city: string }>(
  (v) =>
    isObject(v) && typeof v.city === 'string' && v.city !== ''
      ? { city: v.city }
      : { at: ['city'], message: 'city must be a non-empty string' },
  { type: 'object', properties: { city: { type: 'string', minLength: 1 } }, required: ['city'] },
);
const Weather = standard<{ now: { celsius: number } }>((v) =>
  isObject(v) && isObject(v.now) && typeof v.now.celsius === 'number'
    ? { now: { celsius: v.now.celsius } }
    : { at: ['now', 'celsius'], message: 'expected a number' },
);

const weather = defineTool({
  name: 'weather',
  description: 'Weather for a city',
  input: Query,
  output: Weather,
  effect: 'read',
});

describe('Standard Schema', () => {
  it('defines a tool, with the types from the schema', () => {
    expect(isSchema(Query)).toBe(true);
    expect(isSchema({ '~standard': { version: 2, validate: () => ({ value: 1 }) } })).toBe(false);
    const input: ToolInput<typeof weather> = { city: 'Oslo' };
    const output: ToolOutput<typeof weather> = { now: { celsius: 3 } };
    // @ts-expect-error -- the output type comes from the schema: celsius is a number
    const wrong: ToolOutput<typeof weather> = { now: { celsius: 'warm' } };
    expect([input, output, wrong]).toHaveLength(3);
  });

  it('validates chain input, tool input and tool output at run time, naming the path', async () => {
    const chain = defineChain({
      name: 'forecast',
      input: standard<{ where: string }>((v) =>
        isObject(v) && typeof v.where === 'string'
          ? { where: v.where }
          : { at: ['where'], message: 'where is required' },
      ),
      steps: [{ id: 'w', tool: weather, input: { city: ref('input', 'where') } }],
      output: (s) => s.results.w.now.celsius,
    });
    const ok = await runChain(
      chain,
      { where: 'Oslo' },
      { invoker: functionInvoker({ weather: () => ({ now: { celsius: 3 } }) }) },
    );
    expect(ok.status === 'completed' && ok.output).toBe(3);

    const noWhere = await runChain(chain, {} as never, {
      invoker: functionInvoker({ weather: () => ({ now: { celsius: 3 } }) }),
    });
    expect(noWhere.status === 'failed' && noWhere.error).toMatchObject({
      code: 'invalid_input',
      message: expect.stringContaining("at 'where': where is required"),
    });
    const empty = await runChain(
      chain,
      { where: '' },
      { invoker: functionInvoker({ weather: () => ({ now: { celsius: 3 } }) }) },
    );
    expect(empty.status === 'failed' && empty.error).toMatchObject({
      code: 'invalid_step_input',
      message: expect.stringContaining("at 'city'"),
    });
    const bad = await runChain(
      chain,
      { where: 'Oslo' },
      { invoker: functionInvoker({ weather: () => ({ now: { celsius: 'warm' } }) }) },
    );
    expect(bad.status === 'failed' && bad.error).toMatchObject({
      category: 'validation',
      code: 'invalid_output',
      message: expect.stringContaining("at 'now.celsius': expected a number"),
    });
  });

  it('skips the static ref-path checks it cannot introspect, and keeps them for zod beside it', () => {
    // The output of a Standard Schema tool is opaque to defineChain: a path it cannot see is not an error.
    expect(() =>
      defineChain({
        name: 'opaque',
        input: z.object({}),
        steps: [
          { id: 'w', tool: weather, input: { city: 'Oslo' } },
          { id: 'echo', compute: (s) => s.results.w, output: Weather },
          // @ts-expect-error — the compiler knows the tool's output type, so it reports the path (issue 23)
          { id: 'pick', select: { from: ref('w', 'not.a.path'), expect: 'all' } },
        ],
      }),
    ).not.toThrow();
    // A zod chain input still is: its missing path is reported.
    expect(() =>
      defineChain({
        name: 'zod_side',
        input: z.object({ where: z.string() }),
        steps: [
          // @ts-expect-error — reported by the compiler too (issue 23)
          { id: 'w', tool: weather, input: { city: ref('input', 'wher') } },
        ],
      }),
    ).toThrow(/path 'wher' does not exist in the chain input/);
  });

  it('exports its JSON Schema when it has one (Standard JSON Schema), else {} (any value)', () => {
    expect(schemaToJSONSchema(weather.input)).toEqual({
      type: 'object',
      properties: { city: { type: 'string', minLength: 1 } },
      required: ['city'],
    });
    expect(schemaToJSONSchema(weather.output)).toEqual({});
    const [def] = createToolRegistry([weather], { tiers: { simple: ['weather'] } }).toJSONSchema('simple');
    expect(def).toMatchObject({ name: 'weather', parameters: { type: 'object', required: ['city'] } });
  });

  it('fails an asynchronous validator as a validation issue, without an unhandled rejection', () => {
    const later = {
      '~standard': { version: 1 as const, vendor: 'test', validate: () => Promise.reject(new Error('async')) },
    };
    const r = parseSchema(later, 1);
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.message).toMatch(/asynchronously/);
  });
});
