// A small max-flow (Dinic: BFS levels, then blocking flows by DFS) for the partitioner's min cut.
#include <algorithm>
#include <queue>

#include "aot/aot.h"

namespace kiln::aot {

FlowNetwork::FlowNetwork(int nodes) : adj_(size_t(nodes)), level_(size_t(nodes)), it_(size_t(nodes)) {}

void FlowNetwork::add_edge(int from, int to, int64_t capacity) {
  adj_[size_t(from)].push_back(int(edges_.size()));
  edges_.push_back({to, capacity});
  adj_[size_t(to)].push_back(int(edges_.size()));
  edges_.push_back({from, 0});  // residual edge (index ^ 1)
}

bool FlowNetwork::levels(int s, int t) {
  std::fill(level_.begin(), level_.end(), -1);
  std::queue<int> q;
  level_[size_t(s)] = 0;
  q.push(s);
  while (!q.empty()) {
    const int v = q.front();
    q.pop();
    for (int e : adj_[size_t(v)]) {
      const Edge& ed = edges_[size_t(e)];
      if (ed.cap > 0 && level_[size_t(ed.to)] < 0) {
        level_[size_t(ed.to)] = level_[size_t(v)] + 1;
        q.push(ed.to);
      }
    }
  }
  return level_[size_t(t)] >= 0;
}

int64_t FlowNetwork::push(int v, int t, int64_t f) {
  if (v == t) return f;
  for (int& i = it_[size_t(v)]; i < int(adj_[size_t(v)].size()); ++i) {
    const int e = adj_[size_t(v)][size_t(i)];
    Edge& ed = edges_[size_t(e)];
    if (ed.cap <= 0 || level_[size_t(ed.to)] != level_[size_t(v)] + 1) continue;
    const int64_t got = push(ed.to, t, std::min(f, ed.cap));
    if (got > 0) {
      ed.cap -= got;
      edges_[size_t(e ^ 1)].cap += got;
      return got;
    }
  }
  return 0;
}

int64_t FlowNetwork::max_flow(int s, int t) {
  int64_t flow = 0;
  while (levels(s, t)) {
    std::fill(it_.begin(), it_.end(), 0);
    while (int64_t f = push(s, t, kInf)) flow += f;
  }
  levels(s, t);  // level_ >= 0 now marks the source side of a minimum cut
  return flow;
}

bool FlowNetwork::source_side(int v) const { return level_[size_t(v)] >= 0; }

}  // namespace kiln::aot
