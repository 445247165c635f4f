#include "support/output_capture.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>

namespace opc {

OutputCapture::OutputCapture() {
  fd_ = memfd_create("opcontract-output", MFD_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error(std::string("output capture: memfd_create: ") + std::strerror(errno));
}

OutputCapture::~OutputCapture() {
  restore();
  close(fd_);
}

void OutputCapture::redirect() {
  if (saved_out_ >= 0) return;
  flush_standard_streams();
  saved_out_ = dup(STDOUT_FILENO);
  saved_err_ = dup(STDERR_FILENO);
  dup2(fd_, STDOUT_FILENO);
  dup2(fd_, STDERR_FILENO);
}

void OutputCapture::restore() {
  if (saved_out_ < 0) return;
  flush_standard_streams();
  dup2(saved_out_, STDOUT_FILENO);
  dup2(saved_err_, STDERR_FILENO);
  close(saved_out_);
  close(saved_err_);
  saved_out_ = saved_err_ = -1;
}

std::string OutputCapture::take(size_t max_bytes) {
  struct stat st {};
  std::string text(fstat(fd_, &st) == 0 ? static_cast<size_t>(st.st_size) : 0, '\0');
  for (size_t at = 0; at < text.size();) {
    const ssize_t n = pread(fd_, text.data() + at, text.size() - at, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      text.resize(at);
      break;
    }
    at += static_cast<size_t>(n);
  }
  // Empty again; the offset is shared with every process writing into it.
  if (ftruncate(fd_, 0) == 0) lseek(fd_, 0, SEEK_SET);
  if (text.size() <= max_bytes) return text;
  const size_t half = max_bytes / 2;
  return text.substr(0, half) + "\n[... " + std::to_string(text.size() - 2 * half) + " bytes left out ...]\n" +
         text.substr(text.size() - half);
}

void flush_standard_streams() {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
}

int count_lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n + (!text.empty() && text.back() != '\n');
}

}  // namespace opc
