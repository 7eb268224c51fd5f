package org.example.inventory;

import java.util.ArrayList;
import java.util.List;

public class Inventory {
    private final List<String> names = new ArrayList<>();
    private int version;

    public Inventory() {
        this.version = 0;
    }

    public void add(String name) {
        if (name == null) {
            throw new IllegalArgumentException("name");
        }
        names.add(name);
        version++;
    }

    public List<String> names() {
        return new ArrayList<>(names);
    }

    protected static <T extends Comparable<T>> T largest(List<T> items) {
        T best = null;
        for (T item : items) {
            if (best == null || item.compareTo(best) > 0) {
                best = item;
            }
        }
        return best;
    }

    private enum State {
        EMPTY,
        FULL,
    }

    public record Entry(String name, int count) {
        public Entry {
            if (count < 0) {
                throw new IllegalArgumentException("count");
            }
        }
    }

    static final class Helper {
        int twice(int x) {
            return 2 * x;
        }
    }
}
