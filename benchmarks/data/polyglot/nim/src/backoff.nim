## Retry a failing call with exponentially growing pauses.
import os, math

proc retryDelayMs*(attempt: int): int =
  min(10_000, 100 * 2 ^ attempt)

proc withRetries*[T](action: proc (): T, attempts = 5): T =
  for n in 0 ..< attempts:
    try:
      return action()
    except CatchableError:
      if n + 1 >= attempts: raise
      sleep(retryDelayMs(n))
