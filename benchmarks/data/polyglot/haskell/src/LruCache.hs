module LruCache (Cache, empty, insert, lookupKey) where

import qualified Data.Map.Strict as Map

-- | A bounded cache that forgets the least recently used key.
data Cache k v = Cache { capacity :: Int, tick :: Int, entries :: Map.Map k (Int, v) }

empty :: Int -> Cache k v
empty cap = Cache cap 0 Map.empty

-- | Insert a value, evicting the entry touched longest ago when full.
insert :: Ord k => k -> v -> Cache k v -> Cache k v
insert k v c = evictOldest c { tick = tick c + 1, entries = Map.insert k (tick c, v) (entries c) }

evictOldest :: Ord k => Cache k v -> Cache k v
evictOldest c
  | Map.size (entries c) <= capacity c = c
  | otherwise = c { entries = Map.delete oldest (entries c) }
  where oldest = fst (Map.foldrWithKey (\k (t, _) acc -> if t < snd acc then (k, t) else acc) (undefined, maxBound) (entries c))

lookupKey :: Ord k => k -> Cache k v -> Maybe v
lookupKey k c = snd <$> Map.lookup k (entries c)
