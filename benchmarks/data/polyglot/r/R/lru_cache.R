# A bounded cache that forgets the least recently used key.
new_cache <- function(capacity) {
  env <- new.env()
  env$capacity <- capacity
  env$order <- character(0)
  env$entries <- list()
  env
}

# Drop the key used longest ago once over capacity.
evict_oldest <- function(cache) {
  while (length(cache$order) > cache$capacity) {
    oldest <- cache$order[1]
    cache$entries[[oldest]] <- NULL
    cache$order <- cache$order[-1]
  }
}

cache_put <- function(cache, key, value) {
  cache$order <- c(setdiff(cache$order, key), key)
  cache$entries[[key]] <- value
  evict_oldest(cache)
}
