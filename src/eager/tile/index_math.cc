// The index arithmetic the eager tile programs share: collapsing views to their fewest dims on
// the host, and coordinates and offsets of a linear index inside a program.
#include "eager/tile/tiled.h"

namespace kiln::eager::tiled {

Shape broadcast_strides(const Tensor& t, const Shape& sizes) {
  Shape s(sizes.size(), 0);
  const Shape &ts = t.sizes(), &tst = t.strides();
  const size_t lead = sizes.size() - ts.size();
  for (size_t d = 0; d < ts.size(); ++d) s[lead + d] = ts[d] == 1 ? 0 : tst[d];
  return s;
}

Collapsed collapse(const Shape& sizes, const std::vector<Shape>& strides) {
  Collapsed c;
  c.strides.resize(strides.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    bool merge = !c.sizes.empty();
    for (size_t v = 0; v < strides.size() && merge; ++v) merge = c.strides[v].back() == strides[v][d] * sizes[d];
    if (merge) {
      c.sizes.back() *= sizes[d];
      for (size_t v = 0; v < strides.size(); ++v) c.strides[v].back() = strides[v][d];
    } else {
      c.sizes.push_back(sizes[d]);
      for (size_t v = 0; v < strides.size(); ++v) c.strides[v].push_back(strides[v][d]);
    }
  }
  if (c.sizes.empty()) {
    c.sizes.push_back(1);
    for (Shape& s : c.strides) s.push_back(0);
  }
  return c;
}

int64_t reach(const Shape& sizes, const Shape& strides) {
  int64_t r = 0;
  for (size_t d = 0; d < sizes.size(); ++d) r += (sizes[d] - 1) * (strides[d] < 0 ? -strides[d] : strides[d]);
  return r;
}

std::vector<tile::Val> coordinates(tile::Builder& b, tile::Val i, const std::vector<tile::Val>& sizes) {
  std::vector<tile::Val> coord(sizes.size());
  for (size_t d = sizes.size(); d-- > 1;) {
    coord[d] = i % sizes[d];
    i = b.floor_divide(i, sizes[d]);
  }
  if (!coord.empty()) coord[0] = i;
  return coord;
}

std::vector<tile::Val> int_args(tile::Builder& b, const std::string& name, int from, int to, DType d) {
  std::vector<tile::Val> v(size_t(std::max(to, 0)));
  for (int i = from; i < to; ++i) v[size_t(i)] = b.arg_int(name + std::to_string(i), d);
  return v;
}

tile::Val flat_block(tile::Builder& b, int64_t block, bool wide) {
  const int64_t BLOCK = b.constexpr_int("BLOCK", block);
  b.set_num_warps(4);
  tile::Val pid = b.program_id(0);
  if (wide) pid = pid.to(kInt64);
  return pid * BLOCK + b.arange(0, BLOCK);
}

tile::Val offset_of(const std::vector<tile::Val>& coords, const std::vector<tile::Val>& strides) {
  tile::Val off = coords.at(0) * strides.at(0);
  for (size_t d = 1; d < strides.size(); ++d) off = off + coords[d] * strides[d];
  return off;
}

}  // namespace kiln::eager::tiled
