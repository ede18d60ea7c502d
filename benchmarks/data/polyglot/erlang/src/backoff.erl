%% Retry a failing call with exponentially growing pauses.
-module(backoff).
-export([delay_ms/1, retry/2]).

delay_ms(Attempt) -> min(10000, 100 * (1 bsl Attempt)).

retry(Fun, Attempts) -> retry(Fun, Attempts, 0).

retry(Fun, Attempts, N) ->
    case Fun() of
        {ok, V} -> {ok, V};
        Error when N + 1 >= Attempts -> Error;
        _ -> timer:sleep(delay_ms(N)), retry(Fun, Attempts, N + 1)
    end.
