"A bounded cache that forgets the least recently used key."
mutable struct LruCache{K,V}
    capacity::Int
    order::Vector{K}
    entries::Dict{K,V}
end

LruCache{K,V}(capacity::Int) where {K,V} = LruCache{K,V}(capacity, K[], Dict{K,V}())

"Drop the key used longest ago once over capacity."
function evict_oldest!(cache::LruCache)
    while length(cache.order) > cache.capacity
        oldest = popfirst!(cache.order)
        delete!(cache.entries, oldest)
    end
end

function put!(cache::LruCache, key, value)
    filter!(k -> k != key, cache.order)
    push!(cache.order, key)
    cache.entries[key] = value
    evict_oldest!(cache)
end
