// Run, trace and checkpoint ids: 21 URL-safe characters from Web Crypto (no `node:crypto`, runs anywhere).

const ALPHABET = 'useandom-26T198340PX75pxJACKVERYMINDBUSHWOLF_GQZbfghjklqvwyzrict';
const ID_LENGTH = 21;
/** The alphabet's character codes, by 6-bit value. */
const CODES = Uint16Array.from(ALPHABET, (ch) => ch.charCodeAt(0));
// Random bytes are drawn in batches: one getRandomValues call per 128 ids keeps the per-id cost low.
const POOL_IDS = 128;
const pool = new Uint8Array(ID_LENGTH * POOL_IDS);
let offset = pool.length;
/** The codes of the id being made (reused). */
const chars: number[] = new Array<number>(ID_LENGTH).fill(0);

/**
 * A new 21-character URL-safe id (126 random bits, nanoid's alphabet), from
 * `crypto.getRandomValues`. Made in one piece (`String.fromCharCode` of the 21 codes): appending
 * characters would make a chain of 20 string pieces first (~640 B of garbage per id), and V8 keeps
 * such a chain (~330 B) until something flattens it; one flat string is ~40 B.
 *
 * @example
 * ```ts
 * const runId = newId(); // 'V1StGXR8_Z5jdHi6B-myT'
 * ```
 */
export function newId(): string {
  if (offset + ID_LENGTH > pool.length) {
    crypto.getRandomValues(pool);
    offset = 0;
  }
  for (let i = 0; i < ID_LENGTH; i++) chars[i] = CODES[pool[offset + i]! & 63]!;
  offset += ID_LENGTH;
  return String.fromCharCode(...chars);
}
