<?php

namespace Example\Inventory;

final class Store
{
    private array $items = [];
    private int $version = 0;

    public function __construct(private int $capacity)
    {
        $this->version = 1;
    }

    public function add(string $name, int $count): bool
    {
        if (count($this->items) >= $this->capacity) {
            return false;
        }
        $this->items[$name] = ($this->items[$name] ?? 0) + $count;
        return true;
    }

    public static function repeat($value, int $times): array
    {
        $out = [];
        for ($i = 0; $i < $times; $i++) {
            $out[] = $value;
        }
        return $out;
    }

    protected function count(string $name): int
    {
        return $this->items[$name] ?? 0;
    }
}

interface Countable
{
    public function count(string $name): int;
}

function helper($a, $b)
{
    while ($a > $b) {
        $a -= $b;
    }
    return $a;
}
