%% Reads key = value lines of a settings file.
-module(settings).
-export([parse/1]).

parse(Text) ->
    Lines = string:split(Text, "\n", all),
    maps:from_list([split_pair(L) || L <- Lines, L =/= "", hd(L) =/= $#]).

split_pair(Line) ->
    [Key, Value] = string:split(Line, "="),
    {string:trim(Key), string:trim(Value)}.
