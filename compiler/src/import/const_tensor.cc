#include "const_tensor.h"

#include <cmath>
#include <cstring>

namespace qlstm {
namespace compiler {
namespace import {

bool ConstTensor::is_float() const {
  return type == onnx::TensorProto::FLOAT || type == onnx::TensorProto::DOUBLE;
}

bool foldable_type(int32_t type) {
  switch (type) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::BOOL: return true;
    default: return false;
  }
}

bool bounded_count(const std::vector<int64_t>& dims, int64_t* count) {
  int64_t n = 1;
  for (int64_t d : dims) {
    // Checked before the product so that it never overflows: n <= bound and d <= bound.
    if (d < 0 || d > kMaxFoldElements) return false;
    n *= d;
    if (n > kMaxFoldElements) return false;
  }
  *count = n;
  return true;
}

namespace {

size_t element_bytes(int32_t type) {
  switch (type) {
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::INT64: return 8;
    case onnx::TensorProto::BOOL: return 1;
    default: return 4;
  }
}

// One little-endian element of `type` at `p`.
void read_raw(int32_t type, const char* p, ConstTensor* out) {
  switch (type) {
    case onnx::TensorProto::FLOAT: { float v; std::memcpy(&v, p, 4); out->f.push_back(v); return; }
    case onnx::TensorProto::DOUBLE: { double v; std::memcpy(&v, p, 8); out->f.push_back(v); return; }
    case onnx::TensorProto::INT32: { int32_t v; std::memcpy(&v, p, 4); out->i.push_back(v); return; }
    case onnx::TensorProto::INT64: { int64_t v; std::memcpy(&v, p, 8); out->i.push_back(v); return; }
    default: out->i.push_back(*p != 0 ? 1 : 0); return;
  }
}

// The typed repeated field of `type` (bool is stored in int32_data); false when it has not `count` values.
bool read_field(const onnx::TensorProto& t, int64_t count, ConstTensor* out) {
  const auto n = static_cast<int>(count);
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      if (t.float_data_size() != n) return false;
      out->f.assign(t.float_data().begin(), t.float_data().end());
      return true;
    case onnx::TensorProto::DOUBLE:
      if (t.double_data_size() != n) return false;
      out->f.assign(t.double_data().begin(), t.double_data().end());
      return true;
    case onnx::TensorProto::INT64:
      if (t.int64_data_size() != n) return false;
      out->i.assign(t.int64_data().begin(), t.int64_data().end());
      return true;
    default:
      if (t.int32_data_size() != n) return false;
      for (int32_t v : t.int32_data()) out->i.push_back(t.data_type() == onnx::TensorProto::BOOL ? (v != 0) : v);
      return true;
  }
}

}  // namespace

bool decode(const onnx::TensorProto& t, ConstTensor* out) {
  if (!foldable_type(t.data_type()) || t.data_location() == onnx::TensorProto::EXTERNAL) return false;
  *out = ConstTensor();
  out->type = t.data_type();
  out->dims.assign(t.dims().begin(), t.dims().end());
  int64_t count = 0;
  if (!bounded_count(out->dims, &count)) return false;
  if (!t.has_raw_data()) return read_field(t, count, out);
  const size_t bytes = element_bytes(out->type);
  if (t.raw_data().size() != static_cast<size_t>(count) * bytes) return false;
  for (int64_t k = 0; k < count; ++k) read_raw(out->type, t.raw_data().data() + static_cast<size_t>(k) * bytes, out);
  return true;
}

void encode(const ConstTensor& c, const std::string& name, onnx::TensorProto* t) {
  t->Clear();
  t->set_name(name);
  t->set_data_type(c.type);
  for (int64_t d : c.dims) t->add_dims(d);
  // The bytes written in place, one element type per loop (an append per element was the slow
  // part of a large fold).
  const size_t n = static_cast<size_t>(c.size());
  std::string* raw = t->mutable_raw_data();
  raw->resize(n * element_bytes(c.type));
  char* at = &(*raw)[0];
  switch (c.type) {
    case onnx::TensorProto::FLOAT:
      for (size_t k = 0; k < n; ++k) {
        const float v = static_cast<float>(c.f[k]);
        std::memcpy(at + 4 * k, &v, 4);
      }
      break;
    case onnx::TensorProto::DOUBLE:
      if (n > 0) std::memcpy(at, c.f.data(), 8 * n);
      break;
    case onnx::TensorProto::INT32:
      for (size_t k = 0; k < n; ++k) {
        const int32_t v = static_cast<int32_t>(c.i[k]);
        std::memcpy(at + 4 * k, &v, 4);
      }
      break;
    case onnx::TensorProto::INT64:
      if (n > 0) std::memcpy(at, c.i.data(), 8 * n);
      break;
    default:
      for (size_t k = 0; k < n; ++k) at[k] = c.i[k] != 0 ? 1 : 0;
      break;
  }
}

bool filled(int32_t type, const std::vector<int64_t>& dims, double v, ConstTensor* out) {
  int64_t count = 0;
  if (!foldable_type(type) || !bounded_count(dims, &count)) return false;
  *out = ConstTensor();
  out->type = type;
  out->dims = dims;
  if (out->is_float()) {
    out->f.assign(static_cast<size_t>(count), v);
    return true;
  }
  constexpr double kInt64Range = 9.2e18;
  if (!(std::fabs(v) < kInt64Range)) return false;  // NaN, infinite or beyond int64: left to the model
  const int64_t iv = type == onnx::TensorProto::BOOL ? (v != 0.0) : static_cast<int64_t>(v);
  if (type == onnx::TensorProto::INT32 && (iv < INT32_MIN || iv > INT32_MAX)) return false;
  out->i.assign(static_cast<size_t>(count), iv);
  return true;
}

bool as_ints(const ConstTensor& c, std::vector<int64_t>* out) {
  out->clear();
  if (!c.is_float()) {
    *out = c.i;
    return true;
  }
  constexpr double kLimit = double(int64_t{1} << 62);
  for (double v : c.f) {
    if (!(v >= -kLimit && v <= kLimit) || v != std::floor(v)) return false;
    out->push_back(static_cast<int64_t>(v));
  }
  return true;
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
