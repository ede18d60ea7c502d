import 'dart:collection';

/// A bounded cache that forgets the least recently used key.
class LruCache<K, V> {
  final int capacity;
  final LinkedHashMap<K, V> _entries = LinkedHashMap();

  LruCache(this.capacity);

  V? get(K key) {
    final value = _entries.remove(key);
    if (value != null) _entries[key] = value;
    return value;
  }

  void put(K key, V value) {
    _entries.remove(key);
    _entries[key] = value;
    _evictOldest();
  }

  /// Drop the key used longest ago once over capacity.
  void _evictOldest() {
    while (_entries.length > capacity) {
      _entries.remove(_entries.keys.first);
    }
  }
}
