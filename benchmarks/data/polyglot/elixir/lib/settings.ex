defmodule Store.Settings do
  @moduledoc "Reads `key = value` lines of a settings file."

  def parse(text) do
    text
    |> String.split("\n", trim: true)
    |> Enum.reject(&String.starts_with?(&1, "#"))
    |> Enum.map(&split_pair/1)
    |> Map.new()
  end

  defp split_pair(line) do
    [key, value] = String.split(line, "=", parts: 2)
    {String.trim(key), String.trim(value)}
  end
end
