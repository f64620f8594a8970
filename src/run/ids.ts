// Run, trace and checkpoint ids: 21 URL-safe characters from Web Crypto (no `node:crypto`, runs anywhere).

const ALPHABET = 'useandom-26T198340PX75pxJACKVERYMINDBUSHWOLF_GQZbfghjklqvwyzrict';
const ID_LENGTH = 21;
// Random bytes are drawn in batches: one getRandomValues call per 128 ids keeps the per-id cost low.
const POOL_IDS = 128;
const pool = new Uint8Array(ID_LENGTH * POOL_IDS);
let offset = pool.length;

/**
 * A new 21-character URL-safe id (126 random bits, nanoid's alphabet), from
 * `crypto.getRandomValues`. Built by appending characters, which V8 keeps as a chain of string
 * pieces (~330 B) until something flattens it; reading a character flattens it (~40 B), which
 * matters with thousands of runs in flight.
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
  let id = '';
  for (let i = offset, end = offset + ID_LENGTH; i < end; i++) id += ALPHABET[pool[i]! & 63];
  offset += ID_LENGTH;
  id.charCodeAt(0);
  return id;
}
