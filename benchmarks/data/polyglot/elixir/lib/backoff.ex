defmodule Store.Backoff do
  @moduledoc "Retry a failing call with exponentially growing pauses."

  def delay_ms(attempt, base \\ 100, max \\ 10_000) do
    min(max, base * :math.pow(2, attempt)) |> round()
  end

  def retry(fun, attempts) do
    Enum.reduce_while(0..(attempts - 1), {:error, :never}, fn attempt, _ ->
      case fun.() do
        {:ok, value} -> {:halt, {:ok, value}}
        error -> Process.sleep(delay_ms(attempt)); {:cont, error}
      end
    end)
  end
end
