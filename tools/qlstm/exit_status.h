// The exit status of every qlstm subcommand (README.md "The tool", `qlstm --help`):
//   0  success
//   1  the input was read and refused, or failed a check: a model outside the supported scope, a
//      compile error, constant calibration data, failed vectors, an output that differs
//   2  bad usage or a file that cannot be used: bad flags or flag values, a missing, unreadable
//      or malformed file (ONNX, .qlstm, .npy, vectors), an output that cannot be written, an
//      unknown target CPU or one whose firmware or QEMU is missing
// Commands throw; error_exit (main.cc) prints the message and maps the exception's type.
#ifndef QLSTM_TOOLS_EXIT_STATUS_H_
#define QLSTM_TOOLS_EXIT_STATUS_H_

#include <exception>
#include <stdexcept>
#include <string>

#include "qlstm/compiler/io/file_io.h"
#include "qlstm/compiler/artifacts/model_file.h"

namespace qlstm {
namespace cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRefused = 1;   // read and refused, or a check failed
inline constexpr int kExitBadInput = 2;  // bad usage, or a file that cannot be used

// A flag, a flag value or a combination of flags that cannot work (exit 2).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Prints "qlstm COMMAND: error: MESSAGE" on stderr; returns kExitBadInput for a UsageError, a
// compiler::FileError, a compiler::NpyError, a vectors::FormatError or a device::DeviceError,
// else kExitRefused.
int error_exit(const char* command, const std::exception& e);

// load_model, whose every error is about the file (unreadable, not a .qlstm, a bad CRC or
// field): thrown as a FileError.
inline compiler::CompiledModel load_model_file(const std::string& path) {
  try {
    return compiler::load_model(path);
  } catch (const compiler::FileError&) {
    throw;
  } catch (const compiler::CompileError& e) {
    throw compiler::FileError(e.what());
  }
}

}  // namespace cli
}  // namespace qlstm

#endif  // QLSTM_TOOLS_EXIT_STATUS_H_
