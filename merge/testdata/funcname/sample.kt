package example.inventory

import kotlin.math.max

data class Item(val name: String, val count: Int)

class Store(private val capacity: Int) {
    private val items = mutableMapOf<String, Int>()

    fun add(name: String, count: Int): Boolean {
        if (items.size >= capacity) {
            return false
        }
        items[name] = (items[name] ?: 0) + count
        return true
    }

    private fun largest(): Int {
        var best = 0
        for ((_, v) in items) {
            best = max(best, v)
        }
        return best
    }

    internal suspend fun refresh() {
        items.clear()
        println("refreshed")
    }
}

interface Counter {
    fun count(name: String): Int
}

fun main() {
    val s = Store(10)
    s.add("apple", 3)
    println(s)
}
