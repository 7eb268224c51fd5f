using System;
using System.Collections.Generic;

namespace Example.Inventory
{
    public sealed class Store
    {
        private readonly Dictionary<string, int> items = new Dictionary<string, int>();

        public int Capacity { get; set; }

        public Store(int capacity)
        {
            Capacity = capacity;
        }

        public bool Add(string name, int count)
        {
            if (items.Count >= Capacity)
            {
                return false;
            }
            items[name] = items.TryGetValue(name, out var n) ? n + count : count;
            return true;
        }

        public static List<T> Repeat<T>(T value, int times)
        {
            var list = new List<T>();
            for (int i = 0; i < times; i++)
            {
                list.Add(value);
            }
            return list;
        }

        internal async Task<int> CountAsync(string name)
        {
            await Task.Yield();
            return items.TryGetValue(name, out var n) ? n : 0;
        }
    }

    public record Entry(string Name, int Count);

    public interface IStore
    {
        bool Add(string name, int count);
    }
}
