#include "report/flame_tree.h"

#include <algorithm>

namespace offwake::report {

namespace {

// The order of siblings in the graph: by name, then kind (a kernel and a user frame of one
// name stay apart, their colours differ).
int compare_frames(const FlameFrame& a, const FlameFrame& b) {
  if (int c = a.name.compare(b.name)) return c;
  return static_cast<int>(a.kind) - static_cast<int>(b.kind);
}

// Frame by frame from the bottom; a stack that ends where another goes on sorts after it, so
// that in this order stacks stand left to right as the graph draws them, self time last.
int compare_stacks(const FlameStack& a, const FlameStack& b) {
  const size_t n = std::min(a.frames.size(), b.frames.size());
  for (size_t i = 0; i < n; ++i)
    if (int c = compare_frames(a.frames[i], b.frames[i])) return c;
  return a.frames.size() == b.frames.size() ? 0 : a.frames.size() > b.frames.size() ? -1 : 1;
}

size_t common_prefix(const FlameStack& a, const FlameStack& b) {
  const size_t n = std::min(a.frames.size(), b.frames.size());
  size_t i = 0;
  while (i < n && a.frames[i] == b.frames[i]) ++i;
  return i;
}

// The stacks in graph order, with what is needed to find a node's range and value in O(1):
// sums of values before each stack, and each stack's common prefix with the one before.
struct Sorted {
  const std::vector<FlameStack>& stacks;
  std::vector<uint32_t> order;
  std::vector<uint64_t> before;  // before[i]: sum of the values of order[0..i)
  std::vector<uint32_t> shared;  // shared[i]: frames order[i] has in common with order[i - 1]
  const FlameStack& at(size_t i) const { return stacks[order[i]]; }
};

Sorted sort_stacks(const std::vector<FlameStack>& stacks) {
  Sorted s{stacks, {}, {}, {}};
  for (uint32_t i = 0; i < stacks.size(); ++i)
    if (stacks[i].value) s.order.push_back(i);
  std::sort(s.order.begin(), s.order.end(), [&](uint32_t a, uint32_t b) {
    const int c = compare_stacks(stacks[a], stacks[b]);
    return c ? c < 0 : a < b;
  });
  s.before.resize(s.order.size() + 1);
  s.shared.resize(s.order.size());
  for (size_t i = 0; i < s.order.size(); ++i) {
    s.before[i + 1] = s.before[i] + s.at(i).value;
    if (i) s.shared[i] = static_cast<uint32_t>(common_prefix(s.at(i - 1), s.at(i)));
  }
  return s;
}

// Adds the children of node `parent`, whose stacks are [lo, hi) and share `depth` frames, and
// their children. A child is a run of stacks that also share frame `depth`.
void add_children(const Sorted& s, size_t lo, size_t hi, uint32_t depth, uint32_t parent, double min_value,
                  FlameTree& tree) {
  size_t i = lo;
  while (i < hi && s.at(i).frames.size() > depth) {
    size_t j = i + 1;
    while (j < hi && s.shared[j] > depth) ++j;
    const uint64_t value = s.before[j] - s.before[i];
    if (static_cast<double>(value) >= min_value) {
      const auto index = static_cast<uint32_t>(tree.nodes.size());
      tree.nodes.push_back({&s.at(i).frames[depth], parent, depth + 1, value, s.before[i]});
      add_children(s, i, j, depth + 1, index, min_value, tree);
    }
    i = j;
  }
}

}  // namespace

// Sorted in graph order, the stacks of a node are a run, and its value the difference of two
// sums: only the nodes that are drawn are ever made, which keeps a profile of 100,000 stacks
// (millions of frames, most too narrow to see) fast and small.
FlameTree build_flame_tree(const std::vector<FlameStack>& stacks, double min_value) {
  const Sorted s = sort_stacks(stacks);
  FlameTree tree;
  tree.nodes.push_back({nullptr, 0, 0, s.before.back(), 0});
  add_children(s, 0, s.order.size(), 0, 0, min_value, tree);
  return tree;
}

}  // namespace offwake::report
