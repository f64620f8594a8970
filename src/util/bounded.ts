// Keeping in-memory maps bounded without paying for eviction on every insert.
/** Deletes the oldest tenth of a Map kept in insertion order: batches keep eviction O(1) amortised. */
export function evictOldest(map: Map<string, unknown>, max: number): void {
  let n = map.size - Math.floor(max * 0.9);
  for (const key of map.keys()) {
    if (n-- <= 0) break;
    map.delete(key);
  }
}
