// A test helper for the compiler's refusals: the call throws CompileError whose message contains
// every needle.
#ifndef QLSTM_TESTS_COMPILE_ERROR_H_
#define QLSTM_TESTS_COMPILE_ERROR_H_

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "qlstm/compiler/float/float_lstm.h"

namespace testing_support {

inline void expect_compile_error(const std::function<void()>& f, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "no error, expected one containing: " << needles.front();
  } catch (const qlstm::compiler::CompileError& e) {
    for (const std::string& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

}  // namespace testing_support

#endif  // QLSTM_TESTS_COMPILE_ERROR_H_
