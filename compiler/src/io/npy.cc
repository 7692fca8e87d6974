#include "qlstm/compiler/io/npy.h"

#include "qlstm/compiler/io/file_io.h"
#include "qlstm/compiler/float/float_lstm.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

#include <zip.h>

namespace qlstm {
namespace compiler {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr int64_t kMaxElements = int64_t{1} << 34;

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kFloat32: return 4;
    case DType::kFloat64: return 8;
    case DType::kInt8: return 1;
    case DType::kInt16: return 2;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
  }
  return 0;
}

bool parse_dtype(const std::string& descr, DType* out) {
  // '|i1' and '<i1' both denote int8; '=' means native (little-endian on every supported host).
  if (descr == "<f4" || descr == "=f4") *out = DType::kFloat32;
  else if (descr == "<f8" || descr == "=f8") *out = DType::kFloat64;
  else if (descr == "|i1" || descr == "<i1" || descr == "=i1") *out = DType::kInt8;
  else if (descr == "<i2" || descr == "=i2") *out = DType::kInt16;
  else if (descr == "<i4" || descr == "=i4") *out = DType::kInt32;
  else if (descr == "<i8" || descr == "=i8") *out = DType::kInt64;
  else return false;
  return true;
}

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw NpyError(path + ": " + why);
}

// The text after "'key':" in the header dictionary, with leading blanks skipped; npos if absent.
size_t value_of(const std::string& header, const std::string& key) {
  const size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) return at;
  size_t p = header.find_first_not_of(" \t", at + key.size() + 2);
  if (p == std::string::npos || header[p] != ':') return std::string::npos;
  return header.find_first_not_of(" \t", p + 1);
}

// The text between `open` at `from` and the next `close`; false if malformed.
bool delimited(const std::string& header, size_t from, char open, char close, std::string* out) {
  if (from == std::string::npos || from >= header.size() || header[from] != open) return false;
  const size_t end = header.find(close, from + 1);
  if (end == std::string::npos) return false;
  *out = header.substr(from + 1, end - from - 1);
  return true;
}

}  // namespace

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "<f4";
    case DType::kFloat64: return "<f8";
    case DType::kInt8: return "|i1";
    case DType::kInt16: return "<i2";
    case DType::kInt32: return "<i4";
    case DType::kInt64: return "<i8";
  }
  return "?";
}

int64_t NpyArray::element_count() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<float> NpyArray::as_float(const std::string& what) const {
  const size_t n = static_cast<size_t>(element_count());
  std::vector<float> out(n);
  if (dtype == DType::kFloat32) {
    if (n > 0) std::memcpy(out.data(), bytes.data(), n * sizeof(float));
  } else if (dtype == DType::kFloat64) {
    for (size_t k = 0; k < n; ++k) {
      double v;
      std::memcpy(&v, bytes.data() + k * sizeof(double), sizeof(double));
      if (!std::isfinite(v) || std::fabs(v) > static_cast<double>(std::numeric_limits<float>::max())) {
        std::ostringstream m;
        m << what << ": float64 value [" << k << "] = " << v
          << (std::isfinite(v) ? " does not fit float32" : " is not finite");
        throw NpyError(m.str());
      }
      out[k] = static_cast<float>(v);
    }
  } else {
    throw NpyError(what + ": dtype " + dtype_name(dtype) + " where float32 is expected");
  }
  return out;
}

std::vector<int8_t> NpyArray::as_int8(const std::string& what) const {
  if (dtype != DType::kInt8) {
    throw NpyError(what + ": dtype " + dtype_name(dtype) + " where int8 is expected");
  }
  return std::vector<int8_t>(bytes.begin(), bytes.end());
}

std::vector<int64_t> NpyArray::as_integers(const std::string& what) const {
  if (dtype == DType::kFloat32 || dtype == DType::kFloat64) {
    throw NpyError(what + ": dtype " + dtype_name(dtype) + " where integers are expected");
  }
  const size_t n = static_cast<size_t>(element_count()), size = dtype_size(dtype);
  std::vector<int64_t> out(n);
  for (size_t k = 0; k < n; ++k) {
    const uint8_t* p = bytes.data() + k * size;
    if (dtype == DType::kInt8) {
      out[k] = static_cast<int8_t>(p[0]);
    } else if (dtype == DType::kInt16) {
      int16_t v;
      std::memcpy(&v, p, sizeof v);
      out[k] = v;
    } else if (dtype == DType::kInt32) {
      int32_t v;
      std::memcpy(&v, p, sizeof v);
      out[k] = v;
    } else {
      std::memcpy(&out[k], p, sizeof(int64_t));
    }
  }
  return out;
}

NpyArray read_npy(const std::string& path) {
  std::string bytes;
  try {
    bytes = read_file(path);
  } catch (const CompileError& e) {
    throw NpyError(e.what());
  }
  return is_zip(bytes) ? parse_npz(bytes, path) : parse_npy(bytes, path);
}

bool is_zip(const std::string& bytes) {
  // A local file header, or the end record of an empty archive.
  return bytes.compare(0, 4, std::string("PK\x03\x04", 4)) == 0 || bytes.compare(0, 4, std::string("PK\x05\x06", 4)) == 0;
}

NpyArray parse_npz(const std::string& bytes, const std::string& path) {
  zip_error_t error;
  zip_error_init(&error);
  auto zip_fail = [&](const std::string& what) {
    const std::string why = what + ": " + zip_error_strerror(&error);
    zip_error_fini(&error);
    fail(path, why);
  };
  // libzip reads from our buffer (not freed by it); the source is the archive's once opened.
  zip_source_t* source = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  if (source == nullptr) zip_fail("cannot read the .npz archive");
  zip_t* opened = zip_open_from_source(source, ZIP_RDONLY | ZIP_CHECKCONS, &error);
  if (opened == nullptr) {
    zip_source_free(source);
    zip_fail("not a readable .npz (zip) archive");
  }
  zip_error_fini(&error);
  const std::unique_ptr<zip_t, void (*)(zip_t*)> archive(opened, zip_discard);
  const zip_int64_t members = zip_get_num_entries(archive.get(), 0);
  if (members != 1) {
    fail(path, "a .npz archive of " + std::to_string(members) + " arrays, expected exactly one (save the array "
               "alone with np.save or np.savez)");
  }
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(archive.get(), 0, 0, &st) != 0 || (st.valid & ZIP_STAT_SIZE) == 0) {
    fail(path, std::string("cannot read the .npz member: ") + zip_strerror(archive.get()));
  }
  const std::string member = path + " (" + ((st.valid & ZIP_STAT_NAME) != 0 && st.name ? st.name : "member 0") + ")";
  const std::unique_ptr<zip_file_t, int (*)(zip_file_t*)> file(zip_fopen_index(archive.get(), 0, 0), zip_fclose);
  if (!file) fail(member, std::string("cannot open the member: ") + zip_strerror(archive.get()));
  // Read in chunks up to the size the archive declares (and one byte more, to catch a liar):
  // nothing is allocated from the declared size alone.
  constexpr size_t kChunk = size_t{1} << 16;
  std::string data;
  std::vector<char> chunk(kChunk);
  for (;;) {
    const zip_int64_t got = zip_fread(file.get(), chunk.data(), chunk.size());
    if (got < 0) fail(member, std::string("damaged member: ") + zip_file_strerror(file.get()));
    if (got == 0) break;
    data.append(chunk.data(), static_cast<size_t>(got));
    if (data.size() > st.size) fail(member, "the member is longer than the archive says");
  }
  if (data.size() != st.size) fail(member, "truncated member");
  return parse_npy(data, member);
}

NpyArray parse_npy(const std::string& bytes, const std::string& path) {
  std::istringstream in(bytes);
  char magic[kMagicSize];
  if (!in.read(magic, kMagicSize) || std::memcmp(magic, kMagic, kMagicSize) != 0) {
    fail(path, "not a .npy file (bad magic)");
  }
  unsigned char version[2];
  if (!in.read(reinterpret_cast<char*>(version), 2)) fail(path, "truncated header");
  uint32_t header_len = 0;
  if (version[0] == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) fail(path, "truncated header");
    header_len = static_cast<uint32_t>(b[0] | (b[1] << 8));
  } else if (version[0] == 2 || version[0] == 3) {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) fail(path, "truncated header");
    header_len = static_cast<uint32_t>(b[0]) | (static_cast<uint32_t>(b[1]) << 8) |
                 (static_cast<uint32_t>(b[2]) << 16) | (static_cast<uint32_t>(b[3]) << 24);
  } else {
    fail(path, "unsupported .npy format version " + std::to_string(version[0]));
  }
  if (header_len > (1u << 20)) fail(path, "header too large");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) fail(path, "truncated header");

  NpyArray a;
  std::string descr, shape_text;
  if (!delimited(header, value_of(header, "descr"), '\'', '\'', &descr)) {
    fail(path, "header field 'descr' missing or malformed");
  }
  if (!parse_dtype(descr, &a.dtype)) {
    fail(path, "header field 'descr': unsupported dtype '" + descr +
                   "' (float32, float64, int8, int16 or int32, little-endian)");
  }
  const size_t order = value_of(header, "fortran_order");
  if (order == std::string::npos) fail(path, "header field 'fortran_order' missing");
  if (header.compare(order, 4, "True") == 0) {
    fail(path, "header field 'fortran_order': Fortran order is not supported");
  }
  if (header.compare(order, 5, "False") != 0) fail(path, "header field 'fortran_order' malformed");
  if (!delimited(header, value_of(header, "shape"), '(', ')', &shape_text)) {
    fail(path, "header field 'shape' missing or malformed");
  }
  std::stringstream dims(shape_text);
  std::string item;
  int64_t count = 1;
  while (std::getline(dims, item, ',')) {
    const size_t b = item.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    const size_t e = item.find_last_not_of(" \tL");
    const std::string digits = item.substr(b, e - b + 1);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
        digits.size() > 12) {
      fail(path, "header field 'shape': bad dimension '" + item + "'");
    }
    const int64_t d = std::stoll(digits);
    a.shape.push_back(d);
    // Checked before multiplying: twelve digits per dimension can overflow int64 in two steps.
    if (d > 0 && count > kMaxElements / d) fail(path, "header field 'shape': too many elements");
    count *= d;
  }
  const size_t want = static_cast<size_t>(count) * dtype_size(a.dtype);
  // Compare with what is there before allocating: a header may claim any size.
  const size_t header_end = static_cast<size_t>(in.tellg());
  if (want > bytes.size() - header_end) {
    fail(path, "truncated data: expected " + std::to_string(want) + " bytes for shape (" + shape_text +
                   "), the file has " + std::to_string(bytes.size() - header_end));
  }
  a.bytes.resize(want);
  if (want > 0 && !in.read(reinterpret_cast<char*>(a.bytes.data()), static_cast<std::streamsize>(want))) {
    fail(path, "truncated data: expected " + std::to_string(want) + " bytes for shape (" +
                   shape_text + ")");
  }
  char extra;
  if (in.read(&extra, 1)) fail(path, "trailing bytes after the data");
  return a;
}

void write_npy(const std::string& path, DType dtype, const std::vector<int64_t>& shape,
               const void* data) {
  std::string dims;
  int64_t count = 1;
  for (size_t k = 0; k < shape.size(); ++k) {
    dims += std::to_string(shape[k]) + (shape.size() == 1 ? "," : (k + 1 < shape.size() ? ", " : ""));
    count *= shape[k];
  }
  std::string header = std::string("{'descr': '") + dtype_name(dtype) +
                       "', 'fortran_order': False, 'shape': (" + dims + "), }";
  const size_t preamble = kMagicSize + 2 + 2;
  const size_t total = preamble + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string file(kMagic, kMagicSize);
  file += std::string("\x01\x00", 2);  // format version 1.0
  const uint16_t len = static_cast<uint16_t>(header.size());
  file += static_cast<char>(len & 0xFF);
  file += static_cast<char>(len >> 8);
  file += header;
  if (count > 0) file.append(static_cast<const char*>(data), static_cast<size_t>(count) * dtype_size(dtype));
  try {
    write_file_atomically(path, file);
  } catch (const CompileError& e) {
    throw NpyError(e.what());
  }
}

namespace {
void check_count(const std::string& path, const std::vector<int64_t>& shape, size_t n) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  if (count < 0 || static_cast<size_t>(count) != n) {
    throw NpyError(path + ": " + std::to_string(n) + " values do not fill the shape");
  }
}
}  // namespace

void write_npy_float32(const std::string& path, const std::vector<int64_t>& shape,
                       const std::vector<float>& values) {
  check_count(path, shape, values.size());
  write_npy(path, DType::kFloat32, shape, values.data());
}

void write_npy_int8(const std::string& path, const std::vector<int64_t>& shape,
                    const std::vector<int8_t>& values) {
  check_count(path, shape, values.size());
  write_npy(path, DType::kInt8, shape, values.data());
}

}  // namespace compiler
}  // namespace qlstm
