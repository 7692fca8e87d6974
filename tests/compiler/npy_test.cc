// .npy reading and writing, and the refusal of damaged files.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "qlstm/compiler/npy.h"

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

}  // namespace
