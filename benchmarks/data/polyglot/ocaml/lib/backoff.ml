(* Retry a failing call with exponentially growing pauses. *)
let delay_seconds attempt = Float.min 10.0 (0.1 *. (2.0 ** float_of_int attempt))

let rec retry ?(attempt = 0) ~attempts f =
  match f () with
  | Ok v -> Ok v
  | Error e when attempt + 1 >= attempts -> Error e
  | Error _ ->
      Unix.sleepf (delay_seconds attempt);
      retry ~attempt:(attempt + 1) ~attempts f
