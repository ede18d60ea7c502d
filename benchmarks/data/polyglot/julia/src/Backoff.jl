"Pause before the n-th retry: doubles each time, capped."
retry_delay(attempt::Int; base=0.1, cap=10.0) = min(cap, base * 2.0^attempt)

function with_retries(f; attempts=5)
    for n in 0:attempts-1
        try
            return f()
        catch err
            n + 1 >= attempts && rethrow()
            sleep(retry_delay(n))
        end
    end
end
