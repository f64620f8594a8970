// A Map with a cap on its size: past it, the least recently used entries that may go are dropped.
// The one bounded map of the core: the rate limiters' per-key limiters, the context-hash cache, the
// per-session state of transitions and fallback advice.
import { nextTrimAt } from './bounded.js';

/** Options of {@link BoundedLru}. */
export interface BoundedLruOptions<K, V> {
  /** Whether an entry may be dropped now (e.g. nothing waits on it); default: always. */
  evictable?: (value: V) => boolean;
  /** Called for each entry dropped to stay under the cap (not for `delete` or `clear`). */
  onEvict?: (value: V, key: K) => void;
}

interface Slot<V> {
  value: V;
  /** Read since it was last passed over: gets a second chance before it is dropped. */
  used: boolean;
}

/**
 * At most `max` entries, evicting the least recently used first ("second chance": a read only
 * marks its entry, so a hit costs one field write, not a Map re-insert). An entry that is not
 * `evictable` is kept, whatever its age: the cap can then be passed; after a pass that could not
 * get back under it, eviction waits until the map grew by another tenth of its size, so a map full
 * of busy entries does not cost a full pass per insert, however many there are.
 *
 * @example
 * ```ts
 * const limiters = new BoundedLru<string, Limiter>(10_000, { evictable: (l) => l.idle, onEvict: (l) => l.close() });
 * const limiter = limiters.get(key) ?? limiters.set(key, new Limiter());
 * ```
 */
export class BoundedLru<K, V> {
  private readonly map = new Map<K, Slot<V>>();
  private readonly evictable: ((value: V) => boolean) | undefined;
  private readonly onEvict: ((value: V, key: K) => void) | undefined;
  /** The size past which the next eviction pass runs (the cap, or more after a pass fell short). */
  private trimAt: number;
  /**
   * Where eviction looks next. Every entry it passes is dropped or moved to the back, so it stays at the
   * front of the live entries; kept from pass to pass because a Map's deleted slots stay at its front
   * until it is rehashed, and a new iterator per eviction would step over all of them again (O(cap) an insert).
   */
  private hand: Iterator<[K, Slot<V>]> | undefined;

  constructor(
    readonly max: number,
    options: BoundedLruOptions<K, V> = {},
  ) {
    if (!(Number.isSafeInteger(max) && max > 0))
      throw new TypeError('Expected the cap of a BoundedLru to be a positive integer.');
    this.evictable = options.evictable;
    this.onEvict = options.onEvict;
    this.trimAt = max;
  }

  /** The value under `key`, marked as used. */
  get(key: K): V | undefined {
    const slot = this.map.get(key);
    if (slot === undefined) return undefined;
    slot.used = true;
    return slot.value;
  }

  /** Adds (or replaces) an entry as the most recent one, evicting past the cap; returns `value`. */
  set(key: K, value: V): V {
    const slot = this.map.get(key);
    if (slot === undefined) {
      this.map.set(key, { value, used: false });
      if (this.map.size > this.trimAt) this.trim(key);
      return value;
    }
    // Replaced: the same slot moves to the back (no allocation for a key updated on every call).
    this.map.delete(key);
    slot.value = value;
    slot.used = false;
    this.map.set(key, slot);
    return value;
  }

  /** Whether `key` has an entry (without marking it used). */
  has(key: K): boolean {
    return this.map.has(key);
  }

  /** Removes an entry (without `onEvict`). */
  delete(key: K): boolean {
    const had = this.map.delete(key);
    if (this.map.size <= this.max) this.trimAt = this.max; // back under the cap: the next insert past it trims
    return had;
  }

  /** Removes every entry (without `onEvict`). */
  clear(): void {
    this.map.clear();
    this.hand = undefined;
    this.trimAt = this.max;
  }

  get size(): number {
    return this.map.size;
  }

  /** Entries, least recently added or passed over first; deleting while iterating is safe. */
  *entries(): IterableIterator<[K, V]> {
    for (const [key, slot] of this.map) yield [key, slot.value];
  }

  /** Values, in the order of {@link BoundedLru.entries}. */
  *values(): IterableIterator<V> {
    for (const slot of this.map.values()) yield slot.value;
  }

  /** The oldest entry (the map is not empty). */
  private oldest(): [K, Slot<V>] {
    let next = this.hand?.next();
    if (next === undefined || next.done === true) next = (this.hand = this.map.entries()).next();
    return next.value as [K, Slot<V>];
  }

  /** Drops the oldest unused evictable entries until under the cap (never `keep`, just added); one pass at most. */
  private trim(keep: K): void {
    const { map, max, evictable, onEvict } = this;
    for (let left = map.size; map.size > max && left > 0; left--) {
      const [key, slot] = this.oldest();
      map.delete(key);
      if (slot.used || key === keep || (evictable !== undefined && !evictable(slot.value))) {
        slot.used = false; // passed over: to the back, as if just added
        map.set(key, slot);
        continue;
      }
      onEvict?.(slot.value, key);
    }
    this.trimAt = nextTrimAt(map.size, max);
  }
}
