## A bounded cache that forgets the least recently used key.
import tables

type LruCache*[K, V] = object
  capacity: int
  order: seq[K]
  entries: Table[K, V]

proc newLruCache*[K, V](capacity: int): LruCache[K, V] =
  LruCache[K, V](capacity: capacity)

proc evictOldest[K, V](cache: var LruCache[K, V]) =
  ## Drop the key used longest ago once over capacity.
  while cache.order.len > cache.capacity:
    cache.entries.del(cache.order[0])
    cache.order.delete(0)

proc put*[K, V](cache: var LruCache[K, V], key: K, value: V) =
  let i = cache.order.find(key)
  if i >= 0: cache.order.delete(i)
  cache.order.add(key)
  cache.entries[key] = value
  cache.evictOldest()
