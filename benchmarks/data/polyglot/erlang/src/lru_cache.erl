%% A bounded cache that forgets the least recently used key.
-module(lru_cache).
-export([new/1, put/3]).

new(Capacity) -> #{capacity => Capacity, order => [], entries => #{}}.

put(Key, Value, #{order := Order, entries := Entries} = Cache) ->
    Cache1 = Cache#{order := [Key | lists:delete(Key, Order)], entries := Entries#{Key => Value}},
    evict_oldest(Cache1).

%% Drop the key used longest ago once over capacity.
evict_oldest(#{order := Order, capacity := Cap, entries := Entries} = Cache) when length(Order) > Cap ->
    Oldest = lists:last(Order),
    Cache#{order := lists:droplast(Order), entries := maps:remove(Oldest, Entries)};
evict_oldest(Cache) -> Cache.
