// Whole-file writes that no reader, crash or full disk sees half done: the text goes to
// PATH.tmp beside the file, then a rename puts it in place (the old file stays whole
// until then). Results, reports, corpus cases and campaign state are all written so.
//
//   write_file_atomically("out/results.json", json);  // std::runtime_error on failure
#pragma once

#include <string>

namespace opc {

// Throws std::runtime_error naming the path and the system's reason; leaves no temporary.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace opc
