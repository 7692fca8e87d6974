#include "fold_ops.h"

#include "graph.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

namespace qlstm {
namespace compiler {
namespace import {
namespace {

using Dims = std::vector<int64_t>;

// An axis in [-rank, rank) made non-negative; false out of range.
bool normalize_axis(int64_t axis, int64_t rank, int64_t* out) {
  if (axis < -rank || axis >= rank) return false;
  *out = axis < 0 ? axis + rank : axis;
  return true;
}

// An empty tensor of `like`'s type with `dims`, its storage reserved when the count is bounded.
bool shaped_like(const ConstTensor& like, const Dims& dims, ConstTensor* out) {
  int64_t count = 0;
  if (!bounded_count(dims, &count)) return false;
  *out = ConstTensor();
  out->type = like.type;
  out->dims = dims;
  (out->is_float() ? out->f.reserve(static_cast<size_t>(count)) : out->i.reserve(static_cast<size_t>(count)));
  return true;
}

void push(const ConstTensor& src, int64_t k, ConstTensor* dst) {
  if (src.is_float()) {
    dst->f.push_back(src.f[static_cast<size_t>(k)]);
  } else {
    dst->i.push_back(src.i[static_cast<size_t>(k)]);
  }
}

Dims strides_of(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (size_t k = dims.size(); k-- > 1;) s[k - 1] = s[k] * dims[k];
  return s;
}

// Calls fn(index) for every multi-index of `dims` in row-major order (none when a dim is 0).
void for_each_index(const Dims& dims, const std::function<void(const Dims&)>& fn) {
  for (int64_t d : dims) {
    if (d == 0) return;
  }
  Dims idx(dims.size(), 0);
  while (true) {
    fn(idx);
    size_t k = dims.size();
    while (k > 0 && ++idx[k - 1] == dims[k - 1]) idx[--k] = 0;
    if (k == 0) return;
  }
}

// Output element at each output index = input element at map(index) (a flat input offset).
bool remap(const ConstTensor& in, const Dims& out_dims, const std::function<int64_t(const Dims&)>& map,
           ConstTensor* out) {
  if (!shaped_like(in, out_dims, out)) return false;
  for_each_index(out_dims, [&](const Dims& idx) { push(in, map(idx), out); });
  return true;
}

bool cast(const onnx::NodeProto& n, const ConstTensor& in, ConstTensor* out) {
  const int32_t to = static_cast<int32_t>(int_attribute(n, "to", -1));
  if (!foldable_type(to)) return false;
  *out = ConstTensor();
  out->type = to;
  out->dims = in.dims;
  for (int64_t k = 0; k < in.size(); ++k) {
    if (in.is_float() || out->is_float()) {
      ConstTensor one;
      if (!filled(to, {}, in.value(k), &one)) return false;  // NaN or out of range for an integer type
      push(one, 0, out);
      continue;
    }
    const int64_t v = in.i[static_cast<size_t>(k)];  // integer to integer: exact, not through double
    if (to == onnx::TensorProto::INT32 && (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())) {
      return false;
    }
    out->i.push_back(to == onnx::TensorProto::BOOL ? (v != 0) : v);
  }
  return true;
}

// Squeeze/Unsqueeze axes: the attribute before opset 13, the second input since.
bool axes_input(const onnx::NodeProto& n, const std::vector<const ConstTensor*>& in, Dims* axes, bool* given) {
  *given = true;
  if (const onnx::AttributeProto* a = attribute(n, "axes")) {
    axes->assign(a->ints().begin(), a->ints().end());
    return true;
  }
  if (in.size() > 1 && in[1] != nullptr) return as_ints(*in[1], axes);
  *given = false;
  return true;
}

bool unsqueeze(const onnx::NodeProto& n, const std::vector<const ConstTensor*>& in, ConstTensor* out) {
  Dims axes;
  bool given = false;
  if (!axes_input(n, in, &axes, &given) || !given) return false;
  const int64_t rank = static_cast<int64_t>(in[0]->dims.size() + axes.size());
  std::set<int64_t> at;
  for (int64_t a : axes) {
    int64_t k = 0;
    if (!normalize_axis(a, rank, &k) || !at.insert(k).second) return false;
  }
  Dims dims;
  size_t src = 0;
  for (int64_t k = 0; k < rank; ++k) dims.push_back(at.count(k) ? 1 : in[0]->dims[src++]);
  *out = *in[0];
  out->dims = dims;
  return true;
}

bool squeeze(const onnx::NodeProto& n, const std::vector<const ConstTensor*>& in, ConstTensor* out) {
  Dims axes;
  bool given = false;
  if (!axes_input(n, in, &axes, &given)) return false;
  const Dims& d = in[0]->dims;
  std::set<int64_t> drop;
  for (int64_t a : axes) {
    int64_t k = 0;
    if (!normalize_axis(a, static_cast<int64_t>(d.size()), &k) || d[static_cast<size_t>(k)] != 1) return false;
    drop.insert(k);
  }
  Dims dims;
  for (size_t k = 0; k < d.size(); ++k) {
    const bool unit = given ? drop.count(static_cast<int64_t>(k)) > 0 : d[k] == 1;
    if (!unit) dims.push_back(d[k]);
  }
  *out = *in[0];
  out->dims = dims;
  return true;
}

bool transpose(const onnx::NodeProto& n, const ConstTensor& in, ConstTensor* out) {
  const size_t rank = in.dims.size();
  Dims perm;
  if (const onnx::AttributeProto* a = attribute(n, "perm")) {
    perm.assign(a->ints().begin(), a->ints().end());
  } else {
    for (size_t k = rank; k-- > 0;) perm.push_back(static_cast<int64_t>(k));
  }
  Dims sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  if (sorted.size() != rank) return false;
  for (size_t k = 0; k < rank; ++k) {
    if (sorted[k] != static_cast<int64_t>(k)) return false;
  }
  const Dims st = strides_of(in.dims);
  Dims dims;
  for (int64_t p : perm) dims.push_back(in.dims[static_cast<size_t>(p)]);
  return remap(in, dims, [&](const Dims& idx) {
    int64_t off = 0;
    for (size_t k = 0; k < rank; ++k) off += idx[k] * st[static_cast<size_t>(perm[k])];
    return off;
  }, out);
}

bool reshape(const onnx::NodeProto& n, const std::vector<const ConstTensor*>& in, ConstTensor* out) {
  Dims shape;
  if (in.size() < 2 || in[1] == nullptr || !as_ints(*in[1], &shape)) return false;
  const bool allowzero = int_attribute(n, "allowzero", 0) != 0;
  const Dims& d = in[0]->dims;
  int64_t known = 1, infer = -1;
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 0 && !allowzero) {
      if (k >= d.size()) return false;
      shape[k] = d[k];
    }
    if (shape[k] == -1) {
      if (infer >= 0) return false;
      infer = static_cast<int64_t>(k);
      continue;
    }
    if (shape[k] < 0 || (shape[k] > 0 && known > kMaxFoldElements / shape[k])) return false;
    known *= shape[k];
  }
  const int64_t count = in[0]->size();
  if (infer >= 0) {
    if (known == 0 || count % known != 0) return false;
    shape[static_cast<size_t>(infer)] = count / known;
  } else if (known != count) {
    return false;
  }
  *out = *in[0];
  out->dims = shape;
  return true;
}

bool concat(const onnx::NodeProto& n, const std::vector<const ConstTensor*>& in, ConstTensor* out) {
  if (in.empty()) return false;
  const int64_t rank = static_cast<int64_t>(in[0]->dims.size());
  int64_t axis = 0;
  if (!normalize_axis(int_attribute(n, "axis", 0), rank, &axis)) return false;
  Dims dims = in[0]->dims;
  dims[static_cast<size_t>(axis)] = 0;
  for (const ConstTensor* t : in) {
    if (t == nullptr || t->type != in[0]->type || static_cast<int64_t>(t->dims.size()) != rank) return false;
    for (int64_t k = 0; k < rank; ++k) {
      if (k != axis && t->dims[static_cast<size_t>(k)] != in[0]->dims[static_cast<size_t>(k)]) return false;
    }
    dims[static_cast<size_t>(axis)] += t->dims[static_cast<size_t>(axis)];
  }
  if (!shaped_like(*in[0], dims, out)) return false;
  // Row-major: for each index of the outer axes, each input's block in turn.
  int64_t outer = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= dims[static_cast<size_t>(k)];
  for (int64_t o = 0; o < outer; ++o) {
    for (const ConstTensor* t : in) {
      const int64_t block = outer == 0 ? 0 : t->size() / outer;
      for (int64_t k = 0; k < block; ++k) push(*t, o * block + k, out);
    }
  }
  return true;
}

bool gather(const onnx::NodeProto& n, const ConstTensor& data, const ConstTensor& indices, ConstTensor* out) {
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  int64_t axis = 0;
  Dims idx;
  if (rank == 0 || !normalize_axis(int_attribute(n, "axis", 0), rank, &axis) || !as_ints(indices, &idx)) return false;
  const int64_t size = data.dims[static_cast<size_t>(axis)];
  for (int64_t& i : idx) {
    if (!normalize_axis(i, size, &i)) return false;
  }
  Dims dims(data.dims.begin(), data.dims.begin() + axis);
  dims.insert(dims.end(), indices.dims.begin(), indices.dims.end());
  dims.insert(dims.end(), data.dims.begin() + axis + 1, data.dims.end());
  const Dims st = strides_of(data.dims), ist = strides_of(indices.dims);
  const size_t q = indices.dims.size();
  return remap(data, dims, [&](const Dims& o) {
    int64_t flat_index = 0;
    for (size_t k = 0; k < q; ++k) flat_index += o[static_cast<size_t>(axis) + k] * ist[k];
    int64_t off = idx[static_cast<size_t>(flat_index)] * st[static_cast<size_t>(axis)];
    for (int64_t k = 0; k < axis; ++k) off += o[static_cast<size_t>(k)] * st[static_cast<size_t>(k)];
    for (int64_t k = axis + 1; k < rank; ++k) off += o[q + static_cast<size_t>(k) - 1] * st[static_cast<size_t>(k)];
    return off;
  }, out);
}

// Start, end and step of one sliced axis of `size`, clamped as numpy (and ONNX) do.
bool slice_range(int64_t size, int64_t start, int64_t end, int64_t step, Dims* picks) {
  if (step == 0) return false;
  auto clamp = [&](int64_t v, int64_t lo, int64_t hi) {
    if (v < 0) v = v < -size ? -1 : v + size;  // stays >= -1 without overflow
    return std::min(std::max(v, lo), hi);
  };
  const int64_t b = step > 0 ? clamp(start, 0, size) : clamp(start, -1, size - 1);
  const int64_t e = step > 0 ? clamp(end, 0, size) : clamp(end, -1, size - 1);
  picks->clear();
  // Steps as large as int64 allows: the next index is taken only when it is inside the range.
  for (int64_t k = b; step > 0 ? k < e : k > e;) {
    picks->push_back(k);
    if (step > 0 ? e - k <= step : k - e - 1 <= -(step + 1)) break;
    k += step;
  }
  return true;
}

bool slice(const std::vector<const ConstTensor*>& in, ConstTensor* out) {
  Dims starts, ends, axes, steps;
  if (in.size() < 3 || !in[1] || !in[2] || !as_ints(*in[1], &starts) || !as_ints(*in[2], &ends)) return false;
  const int64_t rank = static_cast<int64_t>(in[0]->dims.size());
  if (in.size() > 3 && in[3] != nullptr) {
    if (!as_ints(*in[3], &axes)) return false;
  } else {
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  }
  if (in.size() > 4 && in[4] != nullptr) {
    if (!as_ints(*in[4], &steps)) return false;
  } else {
    steps.assign(starts.size(), 1);
  }
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) return false;
  std::vector<Dims> picks(static_cast<size_t>(rank));
  for (int64_t k = 0; k < rank; ++k) {
    for (int64_t j = 0; j < in[0]->dims[static_cast<size_t>(k)]; ++j) picks[static_cast<size_t>(k)].push_back(j);
  }
  std::set<int64_t> seen;
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t a = 0;
    if (!normalize_axis(axes[k], rank, &a) || !seen.insert(a).second ||
        !slice_range(in[0]->dims[static_cast<size_t>(a)], starts[k], ends[k], steps[k], &picks[static_cast<size_t>(a)])) {
      return false;
    }
  }
  Dims dims;
  for (const Dims& p : picks) dims.push_back(static_cast<int64_t>(p.size()));
  const Dims st = strides_of(in[0]->dims);
  return remap(*in[0], dims, [&](const Dims& o) {
    int64_t off = 0;
    for (size_t k = 0; k < o.size(); ++k) off += picks[k][static_cast<size_t>(o[k])] * st[k];
    return off;
  }, out);
}

// numpy's broadcast of two shapes; false when they do not broadcast.
bool broadcast_dims(const Dims& a, const Dims& b, Dims* out) {
  const size_t rank = std::max(a.size(), b.size());
  out->assign(rank, 1);
  for (size_t k = 0; k < rank; ++k) {
    const int64_t x = k + a.size() >= rank ? a[k + a.size() - rank] : 1;
    const int64_t y = k + b.size() >= rank ? b[k + b.size() - rank] : 1;
    if (x != y && x != 1 && y != 1) return false;
    (*out)[k] = x == 1 ? y : x;
  }
  return true;
}

// The flat offset in a tensor of `dims` that broadcasts to the output index `o`.
int64_t broadcast_offset(const Dims& dims, const Dims& st, const Dims& o) {
  int64_t off = 0;
  const size_t lead = o.size() - dims.size();
  for (size_t k = 0; k < dims.size(); ++k) off += (dims[k] == 1 ? 0 : o[lead + k]) * st[k];
  return off;
}

bool expand(const std::vector<const ConstTensor*>& in, ConstTensor* out) {
  Dims shape, dims;
  if (in.size() < 2 || in[1] == nullptr || !as_ints(*in[1], &shape)) return false;
  for (int64_t d : shape) {
    if (d < 0) return false;
  }
  if (!broadcast_dims(in[0]->dims, shape, &dims)) return false;
  const Dims st = strides_of(in[0]->dims);
  return remap(*in[0], dims, [&](const Dims& o) { return broadcast_offset(in[0]->dims, st, o); }, out);
}

// One integer result of `op`; false on overflow or a division by zero.
bool int_arith(const std::string& op, int64_t a, int64_t b, int64_t* r) {
  if (op == "Add") return !__builtin_add_overflow(a, b, r);
  if (op == "Sub") return !__builtin_sub_overflow(a, b, r);
  if (op == "Mul") return !__builtin_mul_overflow(a, b, r);
  if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) return false;
  *r = a / b;  // ONNX integer Div truncates, as C++ does
  return true;
}

double float_arith(const std::string& op, double a, double b) {
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  return a / b;
}

bool elementwise(const std::string& op, const ConstTensor& a, const ConstTensor& b, ConstTensor* out) {
  Dims dims;
  if (a.type != b.type || a.type == onnx::TensorProto::BOOL || !broadcast_dims(a.dims, b.dims, &dims) ||
      !shaped_like(a, dims, out)) {
    return false;
  }
  const Dims sa = strides_of(a.dims), sb = strides_of(b.dims);
  bool ok = true;
  for_each_index(dims, [&](const Dims& o) {
    const int64_t i = broadcast_offset(a.dims, sa, o), j = broadcast_offset(b.dims, sb, o);
    if (a.is_float()) {
      // Rounded once to float32 on encoding: a float32 +-*/ computed in double and rounded is exact.
      out->f.push_back(float_arith(op, a.f[static_cast<size_t>(i)], b.f[static_cast<size_t>(j)]));
      return;
    }
    int64_t r = 0;
    ok = ok && int_arith(op, a.i[static_cast<size_t>(i)], b.i[static_cast<size_t>(j)], &r);
    out->i.push_back(r);
  });
  if (ok && a.type == onnx::TensorProto::INT32) {
    for (int64_t v : out->i) ok = ok && v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
  }
  return ok;
}

bool constant_of_shape(const onnx::NodeProto& n, const ConstTensor& shape, ConstTensor* out) {
  Dims dims;
  if (!as_ints(shape, &dims)) return false;
  const onnx::AttributeProto* v = attribute(n, "value");
  if (v == nullptr) return filled(onnx::TensorProto::FLOAT, dims, 0.0, out);
  ConstTensor value;
  if (!v->has_t() || !decode(v->t(), &value) || value.size() != 1) return false;
  return filled(value.type, dims, value.value(0), out) && (value.is_float() || out->size() == 0 || out->i[0] == value.i[0]);
}

// Split sizes: the `split` attribute before opset 13, the second input since (or opset 18's
// num_outputs, or equal parts).
bool split_sizes(const onnx::NodeProto& n, const std::vector<const ConstTensor*>& in, int64_t size, Dims* sizes) {
  const int64_t parts = n.output_size();
  if (const onnx::AttributeProto* a = attribute(n, "split")) {
    sizes->assign(a->ints().begin(), a->ints().end());
  } else if (in.size() > 1 && in[1] != nullptr) {
    if (!as_ints(*in[1], sizes)) return false;
  } else {
    if (parts < 1) return false;
    const int64_t each = (size + parts - 1) / parts;  // opset 18: the last part may be smaller
    for (int64_t k = 0; k < parts; ++k) sizes->push_back(std::max<int64_t>(0, std::min(each, size - k * each)));
    if (attribute(n, "num_outputs") == nullptr && size % parts != 0) return false;
  }
  int64_t total = 0;
  for (int64_t s : *sizes) {
    if (s < 0 || s > size) return false;
    total += s;
  }
  return static_cast<int64_t>(sizes->size()) == parts && total == size;
}

bool split(const onnx::NodeProto& n, const std::vector<const ConstTensor*>& in, std::vector<ConstTensor>* out) {
  const ConstTensor& x = *in[0];
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  int64_t axis = 0;
  Dims sizes;
  if (!normalize_axis(int_attribute(n, "axis", 0), rank, &axis) ||
      !split_sizes(n, in, x.dims[static_cast<size_t>(axis)], &sizes)) {
    return false;
  }
  int64_t start = 0;
  for (int64_t s : sizes) {
    ConstTensor starts, ends, axes;
    filled(onnx::TensorProto::INT64, {1}, static_cast<double>(start), &starts);
    filled(onnx::TensorProto::INT64, {1}, static_cast<double>(start + s), &ends);
    filled(onnx::TensorProto::INT64, {1}, static_cast<double>(axis), &axes);
    out->emplace_back();
    if (!slice({&x, &starts, &ends, &axes}, &out->back())) return false;
    start += s;
  }
  return true;
}

}  // namespace

bool foldable_op(const std::string& op) {
  static const std::set<std::string> kOps = {"Identity", "Cast", "Slice", "Concat", "Unsqueeze", "Squeeze",
                                             "Transpose", "Reshape", "Gather", "Split", "Add", "Sub", "Mul",
                                             "Div", "Expand", "ConstantOfShape", "Shape"};
  return kOps.count(op) > 0;
}

bool evaluate(const onnx::NodeProto& n, int64_t opset, const std::vector<const ConstTensor*>& in,
              std::vector<ConstTensor>* out) {
  (void)opset;  // the attribute forms each op had are told apart by which one is present
  const std::string& op = n.op_type();
  if (in.empty() || in[0] == nullptr) return false;
  out->clear();
  if (op == "Split") return split(n, in, out);
  if (n.output_size() != 1) return false;
  out->emplace_back();
  ConstTensor* r = &out->back();
  if (op == "Identity") {
    *r = *in[0];
    return true;
  }
  if (op == "Cast") return cast(n, *in[0], r);
  if (op == "Unsqueeze") return unsqueeze(n, in, r);
  if (op == "Squeeze") return squeeze(n, in, r);
  if (op == "Transpose") return transpose(n, *in[0], r);
  if (op == "Reshape") return reshape(n, in, r);
  if (op == "Concat") return concat(n, in, r);
  if (op == "Gather") return in.size() == 2 && in[1] != nullptr && gather(n, *in[0], *in[1], r);
  if (op == "Slice") return slice(in, r);
  if (op == "Expand") return expand(in, r);
  if (op == "ConstantOfShape") return constant_of_shape(n, *in[0], r);
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    return in.size() == 2 && in[1] != nullptr && elementwise(op, *in[0], *in[1], r);
  }
  return false;
}

bool evaluate_shape(const onnx::NodeProto& n, const std::vector<int64_t>& dims, ConstTensor* out) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  auto clamp = [&](int64_t v) { return v < 0 ? (v < -rank ? 0 : v + rank) : std::min(v, rank); };
  const int64_t b = clamp(int_attribute(n, "start", 0)), e = clamp(int_attribute(n, "end", rank));
  *out = ConstTensor();
  out->type = onnx::TensorProto::INT64;
  for (int64_t k = b; k < e; ++k) out->i.push_back(dims[static_cast<size_t>(k)]);
  out->dims = {static_cast<int64_t>(out->i.size())};
  return true;
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
