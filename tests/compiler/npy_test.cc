// .npy reading and writing, and the refusal of damaged files.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <unistd.h>

#include "qlstm/compiler/io/npy.h"

namespace {

using namespace qlstm::compiler;

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("qlstm_npy_") + std::to_string(::getpid()) + "_" + name))
      .string();
}

TEST(Npy, RoundTripFloatAndInt8) {
  const std::string p = temp_path("a.npy");
  const std::vector<float> v = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -1e-3f};
  write_npy_float32(p, {2, 3}, v);
  const NpyArray a = read_npy(p);
  EXPECT_EQ(a.dtype, DType::kFloat32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.as_float("a"), v);
  EXPECT_THROW(a.as_int8("a"), NpyError);
  const std::vector<int8_t> q = {-128, 0, 127};
  write_npy_int8(p, {3}, q);
  EXPECT_EQ(read_npy(p).as_int8("q"), q);
  std::remove(p.c_str());
}

// Class labels: numpy's default int64 and the narrower integer types, read as integers; float is not.
TEST(Npy, IntegerArraysReadAsIntegers) {
  const std::string p = temp_path("labels.npy");
  const std::vector<int64_t> v = {0, 9, -3, int64_t{1} << 40};
  write_npy(p, DType::kInt64, {4}, v.data());
  const NpyArray a = read_npy(p);
  EXPECT_EQ(a.dtype, DType::kInt64);
  EXPECT_EQ(a.as_integers("a"), v);
  const std::vector<int32_t> w = {7, -2147483647 - 1};
  write_npy(p, DType::kInt32, {2}, w.data());
  EXPECT_EQ(read_npy(p).as_integers("w"), (std::vector<int64_t>{7, -2147483647 - 1}));
  const std::vector<int16_t> h = {-300, 2};
  write_npy(p, DType::kInt16, {2, 1}, h.data());
  EXPECT_EQ(read_npy(p).as_integers("h"), (std::vector<int64_t>{-300, 2}));
  write_npy_int8(p, {2}, {-128, 5});
  EXPECT_EQ(read_npy(p).as_integers("q"), (std::vector<int64_t>{-128, 5}));
  write_npy_float32(p, {1}, {1.0f});
  try {
    read_npy(p).as_integers("labels.npy");
    ADD_FAILURE() << "float32 read as integers";
  } catch (const NpyError& e) {
    EXPECT_STREQ(e.what(), "labels.npy: dtype <f4 where integers are expected");
  }
  std::remove(p.c_str());
}

TEST(Npy, EmptyArrays) {  // found by fuzz_npy: a zero-element float array
  const std::string p = temp_path("empty.npy");
  write_npy_float32(p, {0, 3}, {});
  const NpyArray a = read_npy(p);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(a.as_float("empty").empty());
  std::remove(p.c_str());
}

TEST(Npy, DamagedFilesAreRefusedWithTheReason) {
  const std::string good = temp_path("good.npy");
  write_npy_float32(good, {4, 5}, std::vector<float>(20, 1.0f));
  std::ifstream in(good, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string bad = temp_path("bad.npy");
  auto expect = [&](const std::string& content, const std::string& needle) {
    { std::ofstream(bad, std::ios::binary) << content; }
    try {
      read_npy(bad);
      ADD_FAILURE() << "accepted; expected: " << needle;
    } catch (const NpyError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  };
  expect(bytes.substr(0, bytes.size() - 3), "truncated data");
  expect(bytes.substr(0, 20), "truncated header");
  expect("not numpy at all", "bad magic");
  expect(bytes + "x", "trailing bytes");
  std::string fortran = bytes;
  fortran.replace(fortran.find("False"), 5, "True ");
  expect(fortran, "Fortran order");
  std::string f16 = bytes;
  f16.replace(f16.find("<f4"), 3, "<f2");
  expect(f16, "unsupported dtype '<f2'");
  std::string big_endian = bytes;
  big_endian.replace(big_endian.find("<f4"), 3, ">f4");
  expect(big_endian, "unsupported dtype '>f4'");
  // Found by fuzz_npy: dimensions whose product overflows int64 before any size check.
  std::string huge = bytes;
  const size_t shape_at = huge.find("(4, 5)");
  ASSERT_NE(shape_at, std::string::npos);
  huge.replace(shape_at, 6, "(12, 9999999, 99999951663)");
  huge.erase(huge.find('\n') - 20, 20);  // keep the header length (the padding shrinks)
  expect(huge, "too many elements");
  EXPECT_THROW(read_npy(temp_path("does_not_exist.npy")), NpyError);
  std::remove(good.c_str());
  std::remove(bad.c_str());
}

// numpy's default dtype: float64, converted to float32 once; a value float32 cannot hold is
// refused naming the file and the value's index.
TEST(Npy, Float64IsConvertedAndCheckedToFitFloat32) {
  const std::string p = temp_path("f64.npy");
  const std::vector<double> v = {0.1, -2.5, 1e-3, 3.0e38};
  write_npy(p, DType::kFloat64, {2, 2}, v.data());
  const NpyArray a = read_npy(p);
  EXPECT_EQ(a.dtype, DType::kFloat64);
  EXPECT_EQ(a.as_float(p), (std::vector<float>{0.1f, -2.5f, 1e-3f, 3.0e38f}));
  const std::pair<double, const char*> refused[] = {{1e39, "does not fit float32"},
                                                    {-std::numeric_limits<double>::infinity(), "is not finite"},
                                                    {std::numeric_limits<double>::quiet_NaN(), "is not finite"}};
  for (const auto& [value, why] : refused) {
    const std::vector<double> w = {1.0, value};
    write_npy(p, DType::kFloat64, {2}, w.data());
    try {
      read_npy(p).as_float(p);
      ADD_FAILURE() << value << " accepted";
    } catch (const NpyError& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind(p + ": float64 value [1] = ", 0), 0u) << m;
      EXPECT_NE(m.find(why), std::string::npos) << m;
    }
  }
  std::remove(p.c_str());
}

const std::string kNpz = QLSTM_NPZ_FIXTURES;

// np.savez (stored) and np.savez_compressed (deflated) archives of one array read as that array.
TEST(Npz, OneArrayStoredOrDeflated) {
  for (const char* name : {"one_stored.npz", "one_deflated.npz"}) {
    const NpyArray a = read_npy(kNpz + "/" + name);
    EXPECT_EQ(a.dtype, DType::kFloat64) << name;
    EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 5, 2})) << name;
    const std::vector<float> x = a.as_float(name);
    ASSERT_EQ(x.size(), 20u) << name;
    for (size_t k = 0; k < x.size(); ++k) {
      EXPECT_EQ(x[k], static_cast<float>(-1.0 + 2.0 * static_cast<double>(k) / 19.0)) << name << " " << k;  // np.linspace
    }
  }
}

TEST(Npz, OtherThanOneArrayOrDamagedIsRefusedNamingTheFile) {
  const std::pair<const char*, const char*> refused[] = {
      {"two.npz", "a .npz archive of 2 arrays, expected exactly one"},
      {"none.npz", "a .npz archive of 0 arrays"},
      {"truncated.npz", "not a readable .npz (zip) archive"},
      {"damaged.npz", "damaged member"},
      {"damaged_stored.npz", "damaged member"}};
  for (const auto& [name, why] : refused) {
    const std::string p = kNpz + "/" + name;
    try {
      read_npy(p);
      ADD_FAILURE() << name << " accepted";
    } catch (const NpyError& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind(p, 0), 0u) << m;
      EXPECT_NE(m.find(why), std::string::npos) << m;
    }
  }
  // Every prefix of a good archive is refused, never a crash.
  std::ifstream in(kNpz + "/one_deflated.npz", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t n = 4; n < bytes.size(); ++n) {
    EXPECT_THROW(parse_npz(bytes.substr(0, n), "prefix"), NpyError) << n;
  }
}

}  // namespace
