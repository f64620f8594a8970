// Records keyed by names from outside (step ids, tool names): own keys only, no prototype to inherit from.

/**
 * A new empty object with no prototype, in V8's fast mode: `Object.create(null)` makes a dictionary
 * (~184 B empty, kept by every run in flight), this a plain object whose prototype is then set to
 * `null` (~56 B with three keys). Either way no key is inherited (`constructor`, `__proto__` are own
 * keys like any other), and `Object.getPrototypeOf` is `null`.
 *
 * @example
 * ```ts
 * const results = nullRecord<unknown>();
 * results.find = { tasks: [] };
 * 'toString' in results; // false
 * ```
 */
export function nullRecord<T>(): Record<string, T> {
  return Object.setPrototypeOf({}, null) as Record<string, T>;
}
