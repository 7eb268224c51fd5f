defmodule Inventory.Store do
  @moduledoc "A small store."

  defstruct items: %{}, capacity: 10

  def new(capacity \\ 10) do
    %__MODULE__{capacity: capacity}
  end

  def add(%__MODULE__{} = store, name, count) do
    if map_size(store.items) >= store.capacity do
      {:error, :full}
    else
      {:ok, %{store | items: Map.update(store.items, name, count, &(&1 + count))}}
    end
  end

  defp helper(x) do
    x * 2
  end

  defmacro twice(x) do
    quote do
      unquote(x) * 2
    end
  end
end

defimpl String.Chars, for: Inventory.Store do
  def to_string(store) do
    inspect(store.items)
  end
end

defmodule Inventory.StoreTest do
  use ExUnit.Case

  test "adds" do
    {:ok, s} = Inventory.Store.add(Inventory.Store.new(), "a", 1)
    assert s.items["a"] == 1
  end
end
