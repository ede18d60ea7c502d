(* A bounded cache that forgets the least recently used key. *)
type ('k, 'v) t = { capacity : int; mutable order : 'k list; table : ('k, 'v) Hashtbl.t }

let create capacity = { capacity; order = []; table = Hashtbl.create capacity }

let evict_oldest cache =
  match List.rev cache.order with
  | oldest :: rest when List.length cache.order > cache.capacity ->
      Hashtbl.remove cache.table oldest;
      cache.order <- List.rev rest
  | _ -> ()

let put cache key value =
  Hashtbl.replace cache.table key value;
  cache.order <- key :: List.filter (fun k -> k <> key) cache.order;
  evict_oldest cache
