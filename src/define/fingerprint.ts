// A chain's fingerprint: a stable hash of what it does, so a durable run or a checkpoint is continued
// only by the chain that started it.
import { sha256, toHex } from '../util/sha256.js';
import type { ChainSpec } from './spec.js';
import { isRef } from './ref.js';
import { isSchema, isZodSchema, schemaToJSONSchema, type Schema as AnySchema } from './schema.js';
import { isTool } from './tool.js';
import { isChainLike } from './kinds/plan.js';

type AnySpec = ChainSpec<AnySchema, AnySchema, unknown>;

/**
 * A stable hash of what the chain does: steps, tools, mappings and function sources. Throws on a value
 * it cannot serialize (a structure too deep).
 *
 * @example
 * ```ts
 * const fingerprint = fingerprintOf(spec); // 32 hex digits
 * ```
 */
export function fingerprintOf(spec: AnySpec): string {
  const seen = new WeakSet<object>();
  const text = JSON.stringify(
    {
      name: spec.name,
      version: spec.version ?? '1',
      input: schemaText(spec.input),
      context: schemaText(spec.context),
      steps: spec.steps,
      output: spec.output,
      pre: spec.preconditions,
    },
    (_key, value: unknown) => {
      if (typeof value === 'function') return `fn:${String(value)}`;
      if (typeof value === 'bigint') return `${value}n`;
      if (isRef(value)) return `ref:${value}${value.transformFn ? `|${String(value.transformFn)}` : ''}`;
      if (isChainLike(value)) return `chain:${value.name}:${value.fingerprint}`;
      if (isTool(value))
        return `tool:${value.name}:${value.effect}:${schemaText(value.input)}:${schemaText(value.output)}`;
      if (isSchema(value)) return schemaText(value);
      if (typeof value === 'object' && value !== null) {
        if (seen.has(value)) return '[cycle]';
        seen.add(value);
      }
      return value;
    },
  );
  return toHex(sha256(text)).slice(0, 32);
}

// Schemas are immutable: one rendering each, however many steps use the same tool.
const schemaTexts = new WeakMap<object, string>();

function schemaText(schema: unknown): string {
  if (!isSchema(schema)) return '';
  let text = schemaTexts.get(schema);
  if (text === undefined) {
    try {
      // A Standard Schema without JSON Schema renders as `{}`: its vendor still tells two apart.
      const vendor = isZodSchema(schema) ? '' : `${schema['~standard'].vendor}:`;
      text = `${vendor}${JSON.stringify(schemaToJSONSchema(schema, 'input'))}`;
    } catch {
      text = 'schema';
    }
    schemaTexts.set(schema, text);
  }
  return text;
}
