#include "qlstm/compiler/io/file_io.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "qlstm/compiler/float/float_lstm.h"

namespace qlstm {
namespace compiler {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError(path + ": cannot open file");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw FileError(path + ": cannot write");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      throw FileError(path + ": write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw FileError(path + ": cannot move the temporary file into place");
  }
}

}  // namespace compiler
}  // namespace qlstm
