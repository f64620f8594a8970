// The one error chainkit throws for programmer mistakes: it lists every problem found, each with a path.

/** One problem in a definition or option object. */
export interface DefinitionIssue {
  /** Where the problem is, e.g. `steps[2].input.task_id`. */
  path: string;
  message: string;
}

/**
 * Thrown by `defineTool`, `defineChain`, `createRunner` and friends when a definition is invalid.
 * Lists every problem at once, so one run of the program shows all there is to fix.
 *
 * @example
 * ```ts
 * try { defineChain(spec); } catch (e) {
 *   if (isDefinitionError(e)) for (const i of e.issues) console.log(i.path, i.message);
 * }
 * ```
 */
export class DefinitionError extends Error {
  override readonly name = 'DefinitionError';
  readonly issues: readonly DefinitionIssue[];

  constructor(subject: string, issues: DefinitionIssue[]) {
    const lines = issues.map((i) => `  - ${i.path ? `${i.path}: ` : ''}${i.message}`);
    super(`Invalid ${subject} (${issues.length} problem${issues.length === 1 ? '' : 's'}):\n${lines.join('\n')}`);
    this.issues = Object.freeze(issues.slice());
  }
}

/**
 * Type guard for {@link DefinitionError}.
 *
 * @example
 * ```ts
 * if (isDefinitionError(err)) console.error(err.issues);
 * ```
 */
export function isDefinitionError(value: unknown): value is DefinitionError {
  return value instanceof DefinitionError;
}

/** Collects issues and throws them together; internal helper for validators. */
export class IssueList {
  readonly items: DefinitionIssue[] = [];
  add(path: string, message: string): void {
    this.items.push({ path, message });
  }
  throwIfAny(subject: string): void {
    if (this.items.length > 0) throw new DefinitionError(subject, this.items);
  }
}
