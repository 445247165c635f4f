// What a process writes to its standard output and error, caught in memory instead of
// reaching the terminal: the warnings and prints of an op under test and of torch (C
// stdio, C++ streams, Python's sys.stdout and sys.stderr once flushed), so that a run's
// own progress and verdicts stay readable.
//
//   OutputCapture capture;        // an empty memory file
//   // in the process to quieten (e.g. a forked worker):
//   capture.redirect();           // fds 1 and 2 now write into it
//   ...
//   flush_standard_streams();     // C and C++ buffers out, before anyone reads
//   // in any process holding it (a forked child shares it with its parent):
//   std::string text = capture.take();   // what was written since the last take(), capped
//
// The memory file is shared across fork(), so a parent reads what its child wrote even
// after the child died: a crashing op's last words (an abort's message) are kept.
#pragma once

#include <cstddef>
#include <string>

namespace opc {

class OutputCapture {
 public:
  OutputCapture();  // throws std::runtime_error when no memory file can be made
  ~OutputCapture();
  OutputCapture(const OutputCapture&) = delete;
  OutputCapture& operator=(const OutputCapture&) = delete;

  // From now on, this process's fds 1 and 2 write into the capture (buffers flushed first).
  void redirect();
  // Puts this process's original fds 1 and 2 back (buffers flushed first).
  void restore();

  // What was written since the last take(), then empties the capture. Over `max_bytes`,
  // its head and tail with a line saying how much was left out between them.
  std::string take(size_t max_bytes = 64 * 1024);

 private:
  int fd_ = -1;
  int saved_out_ = -1, saved_err_ = -1;
};

// Flushes C stdio and the C++ standard streams.
void flush_standard_streams();

// Lines in `text` (a last line without a newline counts).
int count_lines(const std::string& text);

}  // namespace opc
