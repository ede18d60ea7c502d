module LruCache exposing (Cache, empty, insert)

import Dict exposing (Dict)


{-| A bounded cache that forgets the least recently used key. -}
type alias Cache =
    { capacity : Int, order : List String, entries : Dict String String }


empty : Int -> Cache
empty capacity =
    { capacity = capacity, order = [], entries = Dict.empty }


insert : String -> String -> Cache -> Cache
insert key value cache =
    evictOldest { cache | order = List.filter ((/=) key) cache.order ++ [ key ], entries = Dict.insert key value cache.entries }


{-| Drop the key used longest ago once over capacity. -}
evictOldest : Cache -> Cache
evictOldest cache =
    case cache.order of
        oldest :: rest ->
            if List.length cache.order > cache.capacity then
                evictOldest { cache | order = rest, entries = Dict.remove oldest cache.entries }
            else
                cache

        [] ->
            cache
