module Settings exposing (parseSettings)

import Dict exposing (Dict)


{-| Reads key = value lines of a settings file. -}
parseSettings : String -> Dict String String
parseSettings text =
    String.lines text
        |> List.filter (\line -> not (String.isEmpty line) && not (String.startsWith "#" line))
        |> List.filterMap splitPair
        |> Dict.fromList


splitPair : String -> Maybe ( String, String )
splitPair line =
    case String.split "=" line of
        key :: rest ->
            Just ( String.trim key, String.trim (String.join "=" rest) )

        [] ->
            Nothing
