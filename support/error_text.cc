#include "support/error_text.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>

namespace opc {
namespace {

bool verbose_from_environment() {
  const char* v = std::getenv("OPCONTRACT_VERBOSE");
  return v && *v && std::strcmp(v, "0") != 0;
}

bool g_verbose = verbose_from_environment();

}  // namespace

void set_verbose_errors(bool on) { g_verbose = on; }
bool verbose_errors() { return g_verbose; }

std::string without_backtrace(const std::string& text) {
  if (g_verbose) return text;
  // c10's what() is the message, then "Exception raised from <where> (most recent call
  // first):" and the frames.
  const size_t cut = text.find("\nException raised from");
  return cut == std::string::npos ? text : text.substr(0, cut);
}

std::string error_text(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e); c10_error && !g_verbose)
    return c10_error->what_without_backtrace();
  return without_backtrace(e.what());
}

}  // namespace opc
