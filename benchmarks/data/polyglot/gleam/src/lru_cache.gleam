//// A bounded cache that forgets the least recently used key.
import gleam/dict.{type Dict}
import gleam/list

pub type Cache(v) {
  Cache(capacity: Int, order: List(String), entries: Dict(String, v))
}

pub fn put(cache: Cache(v), key: String, value: v) -> Cache(v) {
  let order = list.append(list.filter(cache.order, fn(k) { k != key }), [key])
  evict_oldest(Cache(..cache, order: order, entries: dict.insert(cache.entries, key, value)))
}

/// Drop the key used longest ago once over capacity.
fn evict_oldest(cache: Cache(v)) -> Cache(v) {
  case list.length(cache.order) > cache.capacity, cache.order {
    True, [oldest, ..rest] ->
      evict_oldest(Cache(..cache, order: rest, entries: dict.delete(cache.entries, oldest)))
    _, _ -> cache
  }
}
