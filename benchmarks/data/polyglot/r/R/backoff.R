# Pause before the n-th retry: doubles each time, capped.
retry_delay <- function(attempt, base = 0.1, cap = 10) {
  min(cap, base * 2^attempt)
}

with_retries <- function(f, attempts = 5) {
  for (n in seq_len(attempts) - 1) {
    result <- tryCatch(f(), error = function(e) e)
    if (!inherits(result, "error")) return(result)
    Sys.sleep(retry_delay(n))
  }
  stop(result)
}
