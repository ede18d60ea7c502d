(ns store.lru-cache
  "A bounded cache that forgets the least recently used key.")

(defn new-cache [capacity] {:capacity capacity :order [] :entries {}})

(defn- evict-oldest
  "Drop the key used longest ago once the cache is over capacity."
  [{:keys [order capacity entries] :as cache}]
  (if (> (count order) capacity)
    (assoc cache :order (vec (rest order)) :entries (dissoc entries (first order)))
    cache))

(defn put [cache k v]
  (-> cache
      (update :order #(conj (vec (remove #{k} %)) k))
      (assoc-in [:entries k] v)
      evict-oldest))
