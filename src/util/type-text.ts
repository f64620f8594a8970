// Types as short text, for type errors that say what is wrong in their first line.

type UnionToIntersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;
/** One member of a union (the last, as the compiler orders them). */
type LastOf<U> = UnionToIntersection<U extends unknown ? () => U : never> extends () => infer R ? R : never;
type Shallower = [never, 0, 1];

/**
 * A type as short text: primitives, arrays and objects up to three levels, `…` for anything else
 * (used in type error messages, e.g. `{ userId: string }`).
 *
 * @example
 * ```ts
 * type T = TypeText<{ userId: string; tags?: string[] }>; // '{ userId: string; tags?: string[] }'
 * ```
 */
export type TypeText<V, D extends number = 2> = [V] extends [string]
  ? 'string'
  : [V] extends [number]
    ? 'number'
    : [V] extends [boolean]
      ? 'boolean'
      : [V] extends [bigint]
        ? 'bigint'
        : [V] extends [null]
          ? 'null'
          : [V] extends [undefined]
            ? 'undefined'
            : [V] extends [readonly (infer E)[]]
              ? `${TypeText<E, D>}[]`
              : [V] extends [Date]
                ? 'Date'
                : [V] extends [Record<string, unknown>]
                  ? [D] extends [never]
                    ? '{ … }'
                    : `{ ${FieldsText<V, Shallower[D]>} }`
                  : '…';

type FieldText<
  T,
  L extends keyof T & string,
  D extends number,
> = `${L}${{} extends Pick<T, L> ? '?' : ''}: ${TypeText<Exclude<T[L], undefined>, D>}`;

type FieldsText<T, D extends number, K = keyof T & string, Acc extends string = ''> = [K] extends [never]
  ? Acc
  : LastOf<K> extends infer L extends keyof T & string
    ? FieldsText<T, D, Exclude<K, L>, `${FieldText<T, L, D>}${Acc extends '' ? '' : `; ${Acc}`}`>
    : Acc;

/**
 * The members of a union of strings joined with `, ` (for messages listing names).
 *
 * @example
 * ```ts
 * type T = JoinedText<'search' | 'send'>; // 'search, send'
 * ```
 */
export type JoinedText<U extends string, Acc extends string = ''> = [U] extends [never]
  ? Acc
  : LastOf<U> extends infer L extends string
    ? JoinedText<Exclude<U, L>, Acc extends '' ? L : `${L}, ${Acc}`>
    : Acc;
