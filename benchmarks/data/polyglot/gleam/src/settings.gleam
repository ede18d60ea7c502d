//// Reads key = value lines of a settings file.
import gleam/dict.{type Dict}
import gleam/list
import gleam/string

pub fn parse_settings(text: String) -> Dict(String, String) {
  text
  |> string.split("\n")
  |> list.filter(fn(line) { line != "" && !string.starts_with(line, "#") })
  |> list.filter_map(fn(line) { string.split_once(line, "=") })
  |> list.map(fn(pair) { #(string.trim(pair.0), string.trim(pair.1)) })
  |> dict.from_list
}
