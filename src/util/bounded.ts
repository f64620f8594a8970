// Keeping a Map of entries that expire bounded, for the memory stores: such a Map is kept in insertion
// order, which is (nearly) expiry order, so the entries to drop are found at its front.

/**
 * Trims a Map kept in insertion order, oldest first: from the front, drops each expired entry and,
 * while the map holds more than `max`, each entry that may go; stops at the first entry that is
 * neither. An entry `keep` holds (a claim in flight) is passed over, whatever its age. `drop` must
 * delete the entry from the map. Past the cap it drops down to 90 % of `max` (exactly `max` below 10),
 * so one walk serves a tenth of the inserts: O(1) amortised. Returns the size past which the next trim
 * is due: `max`, or, when entries `keep` holds left the map over `max`, its size and a tenth more (a
 * map full of claims in flight is then walked once per tenth of its size in inserts, not on each).
 *
 * @example
 * ```ts
 * let trimAt = max;
 * const drop = (id: string) => entries.delete(id);
 * if (entries.size > trimAt) trimAt = trimOldest(entries, max, (e) => e.expiresAt <= now(), drop);
 * ```
 */
export function trimOldest<K, V>(
  map: Map<K, V>,
  max: number,
  expired: (value: V) => boolean,
  drop: (key: K, value: V) => void,
  keep?: (value: V) => boolean,
): number {
  // Past the cap, down to 90 % at once: each walk from the front passes the Map's deleted slots and the
  // entries kept, so trimming one entry per insert would cost a walk per insert (exact below 10).
  const target = map.size > max ? max - Math.floor(max / 10) : max;
  for (const [key, value] of map) {
    if (keep?.(value)) continue;
    if (map.size <= target && !expired(value)) break;
    drop(key, value);
  }
  return nextTrimAt(map.size, max);
}

/**
 * The size past which a bounded map of `size` entries with cap `max` trims next, after a trim: `max`, or,
 * when entries that may not go left it over `max`, a tenth of its size more. Geometric, so however many
 * entries are busy, a walk over them is paid for by a tenth as many inserts.
 *
 * @example
 * ```ts
 * nextTrimAt(90, 100); // 100
 * nextTrimAt(2_000, 100); // 2_200
 * ```
 */
export function nextTrimAt(size: number, max: number): number {
  return size <= max ? max : size + Math.max(1, Math.floor(size / 10));
}
