"""Inventory helpers: a small module in the shape of real code."""

import dataclasses
import json
from typing import Iterable


@dataclasses.dataclass
class Item:
    name: str
    count: int = 0

    def total(self, price: float) -> float:
        value = self.count * price
        if value < 0:
            raise ValueError("negative")
        return value

    def describe(self):
        parts = [self.name]
        parts.append(str(self.count))
        return " ".join(parts)


class Inventory(object):
    """Items by name."""

    def __init__(self):
        self.items = {}
        self.log = []

    def add(self, item: Item) -> None:
        self.items[item.name] = item
        self.log.append(("add", item.name))

    async def refresh(self, source, *, timeout=10, retries=3, backoff=0.5, verbose_logging_enabled=False):
        data = await source.fetch(timeout=timeout)
        for row in data:
            self.add(Item(**row))
        return len(data)

    def remove(self, name):
        del self.items[name]
        self.log.append(("remove", name))


def load(path):
    with open(path) as f:
        rows = json.load(f)
    inv = Inventory()
    for row in rows:
        inv.add(Item(**row))
    return inv


def dump(inv, path):
    rows = [dataclasses.asdict(i) for i in inv.items.values()]
    with open(path, "w") as f:
        json.dump(rows, f)


def names(items: Iterable[Item]):
    return sorted(i.name for i in items)
