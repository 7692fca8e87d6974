// Whole-file reads and atomic writes for the compiler's inputs and outputs.
#ifndef QLSTM_COMPILER_FILE_IO_H_
#define QLSTM_COMPILER_FILE_IO_H_

#include <string>

namespace qlstm {
namespace compiler {

// The file's bytes; throws CompileError "PATH: cannot open file".
std::string read_file(const std::string& path);

// Writes `bytes` to `path` atomically: a temporary file beside it, then rename. Throws CompileError.
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_FILE_IO_H_
