// The usage the command line prints: all of it for `opcontract --help`, one command's for
// `opcontract COMMAND --help` and after a usage error; and the version line.
#pragma once

#include <ostream>
#include <string>

namespace opc::cli {

// Every command's usage, or only `command`'s; then what every command takes.
void print_usage(std::ostream& out, const std::string& command = "");

// "opcontract 0.1.0, built against LibTorch 2.13.0 (CPU), embedding Python 3.11.7"
std::string version_text();

}  // namespace opc::cli
