defmodule Store.LruCache do
  @moduledoc "A bounded cache that forgets the least recently used key."

  def new(capacity), do: %{capacity: capacity, entries: %{}, order: []}

  def put(cache, key, value) do
    cache = %{cache | entries: Map.put(cache.entries, key, value), order: [key | List.delete(cache.order, key)]}
    evict_oldest(cache)
  end

  # Drop the key used longest ago once the cache is over capacity.
  defp evict_oldest(%{order: order, capacity: cap} = cache) when length(order) > cap do
    {oldest, kept} = List.pop_at(order, -1)
    %{cache | entries: Map.delete(cache.entries, oldest), order: kept}
  end

  defp evict_oldest(cache), do: cache
end
