module Backoff (delayMicros, retrying) where

import Control.Concurrent (threadDelay)

-- | Pause before the n-th retry: doubles each time, capped.
delayMicros :: Int -> Int
delayMicros attempt = min 10000000 (100000 * 2 ^ attempt)

retrying :: Int -> IO (Either e a) -> IO (Either e a)
retrying attempts action = go 0
  where
    go n = do
      result <- action
      case result of
        Left err | n + 1 < attempts -> threadDelay (delayMicros n) >> go (n + 1)
        other -> pure other
