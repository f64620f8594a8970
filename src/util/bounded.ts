// Keeping a Map of entries that expire bounded, for the memory stores: such a Map is kept in insertion
// order, which is (nearly) expiry order, so the entries to drop are found at its front.

/**
 * Trims a Map kept in insertion order, oldest first: from the front, drops each expired entry and,
 * while the map holds more than `max`, each entry that may go; stops at the first entry that is
 * neither. An entry `keep` holds (a claim in flight) is passed over, whatever its age. `drop` must
 * delete the entry from the map. At the cap each insert drops about one entry: O(1) amortised.
 *
 * @example
 * ```ts
 * if (entries.size > max) trimOldest(entries, max, (e) => e.expiresAt <= now(), (id) => entries.delete(id));
 * ```
 */
export function trimOldest<K, V>(
  map: Map<K, V>,
  max: number,
  expired: (value: V) => boolean,
  drop: (key: K, value: V) => void,
  keep?: (value: V) => boolean,
): void {
  for (const [key, value] of map) {
    if (keep?.(value)) continue;
    if (map.size <= max && !expired(value)) break;
    drop(key, value);
  }
}
