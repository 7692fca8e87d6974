// Whole-file reads and atomic writes for the compiler's inputs and outputs.
#ifndef QLSTM_COMPILER_FILE_IO_H_
#define QLSTM_COMPILER_FILE_IO_H_

#include <string>

#include "qlstm/compiler/float/float_lstm.h"

namespace qlstm {
namespace compiler {

// A file that cannot be opened, read or written, or whose bytes are not in its format (as opposed
// to a well-formed input the compiler refuses). The CLI exits 2 on it, 1 on other CompileErrors.
class FileError : public CompileError {
 public:
  using CompileError::CompileError;
};

// The file's bytes; throws FileError "PATH: cannot open file".
std::string read_file(const std::string& path);

// Writes `bytes` to `path` atomically: a temporary file beside it, then rename. Throws FileError.
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_FILE_IO_H_
