//// Retry a failing call with exponentially growing pauses.
import gleam/int

/// Pause in milliseconds before the n-th retry: doubles each time, capped.
pub fn retry_delay(attempt: Int) -> Int {
  int.min(10_000, 100 * int.bitwise_shift_left(1, attempt))
}
