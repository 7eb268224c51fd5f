require 'json'

module Inventory
  class Item
    attr_reader :name, :count

    def initialize(name, count = 0)
      @name = name
      @count = count
    end

    def total(price)
      value = count * price
      raise ArgumentError, 'negative' if value.negative?
      value
    end
  end

  class Store
    def initialize
      @items = {}
      @log = []
    end

    def add(item)
      @items[item.name] = item
      @log << [:add, item.name]
    end

    def remove(name)
      @items.delete(name)
      @log << [:remove, name]
    end

    def to_json(*args)
      @items.values.map { |i| { name: i.name, count: i.count } }.to_json(*args)
    end
  end

  def self.load(path)
    store = Store.new
    JSON.parse(File.read(path)).each do |row|
      store.add(Item.new(row['name'], row['count']))
    end
    store
  end
end
