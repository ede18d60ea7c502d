(* Reads key = value lines of a settings file. *)
let split_pair line =
  match String.index_opt line '=' with
  | Some i ->
      Some (String.trim (String.sub line 0 i), String.trim (String.sub line (i + 1) (String.length line - i - 1)))
  | None -> None

let parse text =
  String.split_on_char '\n' text
  |> List.filter (fun l -> l <> "" && l.[0] <> '#')
  |> List.filter_map split_pair
