#include <map>
#include <string>
#include <vector>

namespace inventory {

class Store {
public:
    explicit Store(int capacity) : capacity_(capacity) {}

    bool add(const std::string &name, int count)
    {
        if (items_.size() >= static_cast<size_t>(capacity_))
            return false;
        items_[name] += count;
        return true;
    }

    int count(const std::string &name) const
    {
        auto it = items_.find(name);
        if (it == items_.end())
            return 0;
        return it->second;
    }

private:
    int capacity_;
    std::map<std::string, int> items_;
};

static int helper(int a, int b)
{
again:
    if (a > b) {
        a -= b;
        goto again;
    }
    return a;
}

template <typename T>
std::vector<T> repeat(const T &value, int times_and_a_very_long_parameter_name_to_pass_eighty)
{
    std::vector<T> out;
    for (int i = 0; i < times_and_a_very_long_parameter_name_to_pass_eighty; i++)
        out.push_back(value);
    return out;
}

}  // namespace inventory

int main(int argc, char **argv)
{
    inventory::Store s(10);
    s.add("apple", 3);
    return s.count("apple") == 3 ? 0 : 1;
}
