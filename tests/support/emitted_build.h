// Builds a model's emitted source (NAME_model.h / NAME_model.cc) with a test's own main, with the
// host compiler against the runtime alone. The test's CMake defines QLSTM_CXX,
// QLSTM_RUNTIME_INCLUDE, QLSTM_RUNTIME_LIB and QLSTM_EXTRA_FLAGS.
#ifndef QLSTM_TESTS_EMITTED_BUILD_H_
#define QLSTM_TESTS_EMITTED_BUILD_H_

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "qlstm/compiler/artifacts/emit_cpp.h"

namespace qlstm {
namespace compiler {

struct EmittedBuild {
  bool ok = false;
  std::string exe;  // dir/NAME_exe
  std::string log;  // the compiler's command and output
};

// Writes the sources into `dir`, then compiles `main_source` (a path) with `defines` (e.g.
// "-DX=1") and NAME_model.cc into dir/NAME_exe with warnings as errors.
inline EmittedBuild build_emitted(const EmittedSource& e, const std::string& name, const std::filesystem::path& dir,
                                  const std::string& main_source, const std::string& defines = "") {
  std::ofstream(dir / (name + "_model.h")) << e.header;
  std::ofstream(dir / (name + "_model.cc")) << e.source;
  EmittedBuild b;
  b.exe = (dir / (name + "_exe")).string();
  const std::string log_path = (dir / (name + "_build.log")).string();
  const std::string cmd = std::string(QLSTM_CXX) + " -std=c++17 -O1 -Wall -Wextra -Werror " + QLSTM_EXTRA_FLAGS +
                          " -I" + QLSTM_RUNTIME_INCLUDE + " -I" + dir.string() + " " + defines + " " + main_source +
                          " " + (dir / (name + "_model.cc")).string() + " " + QLSTM_RUNTIME_LIB + " -o " + b.exe;
  b.ok = std::system((cmd + " > '" + log_path + "' 2>&1").c_str()) == 0;
  std::ifstream in(log_path);
  std::stringstream s;
  s << cmd << "\n" << in.rdbuf();
  b.log = s.str();
  return b;
}

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_TESTS_EMITTED_BUILD_H_
