// The tool step: its spec type and its planner (input mapping checked against the tool's schema).
// Its runner is run/kinds/tool.ts.
import { isPlainObject, type Resolver } from '../mapping.js';
import type { Ref, Scope } from '../ref.js';
import type { InputMapping, StepCommon } from '../step-common.js';
import { isTool, type Tool } from '../tool.js';
import type { KindPlan, PlanContext, StepPlanner } from './plan.js';

/** Calls a tool. */
export interface ToolStep<S = Scope> extends StepCommon<S> {
  tool: Tool;
  /** Literals and refs, or a function of the scope returning the whole input. */
  input: InputMapping | ((scope: S) => unknown);
}

/** A tool step's fields of the plan. */
export interface ToolPlan {
  readonly tool?: Tool;
  /** Tool steps: builds the tool input. */
  readonly resolveInput?: Resolver;
}

/**
 * Checks a tool step: a tool made by defineTool(), an input mapping that fits its schema (or a
 * function), and a `confirm` on a destructive tool.
 *
 * @example
 * ```ts
 * const { output, fields } = toolPlanner.plan(step, 'steps[0]', 0, ctx, refs);
 * ```
 */
export const toolPlanner: StepPlanner<ToolStep, ToolPlan> = {
  plan(step: Partial<ToolStep>, at: string, i: number, ctx: PlanContext, refs: Ref[]): KindPlan<ToolPlan> {
    const { issues } = ctx;
    const tool = step.tool;
    if (!isTool(tool)) {
      issues.add(`${at}.tool`, 'Expected a tool made by defineTool().');
      return { output: null, usesScope: false, fields: undefined };
    }
    let usesScope = false;
    let resolveInput: Resolver;
    if (typeof step.input === 'function') {
      usesScope = true;
      resolveInput = step.input as Resolver;
    } else if (isPlainObject(step.input)) {
      resolveInput = ctx.mappingResolver(step.input, tool.input, `${at}.input`, i, false, tool.name, refs);
    } else {
      issues.add(`${at}.input`, 'Expected `input` to be an object of literals and refs, or a function of the scope.');
      resolveInput = () => undefined;
    }
    if (tool.effect === 'destructive' && step.confirm === undefined) {
      issues.add(
        `${at}.confirm`,
        `tool ${tool.name} is destructive: add \`confirm: { prompt }\`, or \`confirm: false\` to waive it explicitly.`,
      );
    }
    return { output: tool.output, usesScope, fields: { tool, resolveInput } };
  },
};
