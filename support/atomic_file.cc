#include "support/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace opc {

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) {
      const std::string why = std::strerror(errno);
      std::remove(tmp.c_str());
      throw std::runtime_error(path + ": cannot write " + tmp + " (" + why + ")");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot move " + tmp + " into place (" + why + ")");
  }
}

}  // namespace opc
