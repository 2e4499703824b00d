// Flame stacks merged into one tree, the shape a flame graph draws: stacks with equal frames
// from the bottom share their nodes, and a node's value is the sum of the stacks through it.
// Internal to the SVG renderer (and its tests).
#pragma once

#include <cstdint>
#include <vector>

#include "report/flamegraph.h"

namespace offwake::report {

struct FlameNode {
  const FlameFrame* frame = nullptr;  // into the stacks given to build_flame_tree; null: the root
  uint32_t parent = 0;                // index of the parent node (the root is its own parent)
  uint32_t depth = 0;                 // 0: the root, 1: a bottom frame (the thread), ...
  uint64_t value = 0;                 // ns of every stack through this node
  uint64_t start = 0;                 // ns left of it in the graph: its left edge
};

struct FlameTree {
  // nodes[0] is the root (every stack, drawn as nothing). The others are in pre-order: a
  // node's children come after it, before its next sibling, sorted by name and then kind, and
  // stand side by side from their parent's left edge; the time of stacks that end in a node
  // is right of its children.
  std::vector<FlameNode> nodes;
  uint64_t total() const { return nodes.front().value; }
};

// The tree of `stacks`, which must outlive it. Nodes of less than `min_value` are left out, and
// everything above them: their time stays in their parent, and their siblings keep their
// places. Stacks of value 0 are left out; a stack without frames counts in the total only.
FlameTree build_flame_tree(const std::vector<FlameStack>& stacks, double min_value = 0);

}  // namespace offwake::report
