module Backoff exposing (retryDelay)


{-| Pause in milliseconds before the n-th retry: doubles each time, capped. -}
retryDelay : Int -> Float
retryDelay attempt =
    min 10000 (100 * toFloat (2 ^ attempt))
