// Exceptions as messages for a person. PyTorch's c10::Error carries a C++ backtrace (a
// frame list) in what(); opcontract prints the message alone, and the backtrace only when
// asked for it, for an issue report:
//
//   set_verbose_errors(true);            // --verbose, or OPCONTRACT_VERBOSE=1 in the environment
//   catch (const std::exception& e) { std::cerr << error_text(e); }
#pragma once

#include <exception>
#include <string>

namespace opc {

void set_verbose_errors(bool on);
bool verbose_errors();

// e.what() without PyTorch's backtrace, unless verbose_errors().
std::string error_text(const std::exception& e);

// The same for a message already turned into text (an error from the worker process).
std::string without_backtrace(const std::string& text);

// Appended to an error message that lost its backtrace, saying how to get it back.
inline constexpr const char* kVerboseHint = " (--verbose or OPCONTRACT_VERBOSE=1 shows PyTorch's backtrace)";

}  // namespace opc
