#include "cli/session.h"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "cli/command.h"
#include "spec/contract_loader.h"
#include "spec/not_covered.h"
#include "runners/op_binding.h"
#include "runners/python/bridge.h"
#include "support/output_capture.h"

namespace opc::cli {
namespace {

void load_library(const std::string& path) {
  if (!dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL))
    throw std::runtime_error("--load " + path + ": cannot load it as a shared library: " + dlerror());
}

// The embedded Python, for --import and for commands that show Python-registered ops
// (the checks start it themselves when their fake or compiled mode runs). A build without
// one, or --no-python, runs on: what needs it reports not run, with the reason.
void start_python(const Args& a, const Command& command) {
  if (!a.python || (a.imports.empty() && !command.starts_python)) return;
  try {
    python::start();
  } catch (const std::exception& e) {
    if (!a.imports.empty()) throw UsageError(std::string("--import needs the embedded Python: ") + e.what());
    if (OPC_EMBEDS_PYTHON) std::cerr << "opcontract: warning: " << e.what() << "\n";
  }
}

}  // namespace

Session open_session(const Args& a, const Command& command, const char* self) {
  start_python(a, command);
  Session s{self, registered_op_names()};
  for (const auto& l : a.loads) load_library(l);
  for (const auto& m : a.imports) python::import_module(m);
  return s;
}

std::optional<std::vector<std::shared_ptr<const Contract>>> load_contracts(const std::vector<std::string>& paths) {
  std::vector<std::shared_ptr<const Contract>> contracts;
  int bad = 0;
  for (const auto& path : paths) {
    try {
      contracts.push_back(std::make_shared<const Contract>(load_contract(path)));
    } catch (const ContractError& e) {
      std::cerr << e.what() << "\n";
      ++bad;
    }
  }
  if (bad) return std::nullopt;
  return contracts;
}

std::vector<std::shared_ptr<const Contract>> load_contract_dirs(const std::vector<std::string>& dirs) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const auto& d : dirs) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) throw UsageError("--contracts " + d + ": not a directory");
    for (const auto& e : fs::recursive_directory_iterator(d, ec))
      if (e.is_regular_file() && e.path().extension() == ".yaml") files.push_back(e.path().string());
    if (ec) throw std::runtime_error("--contracts " + d + ": " + ec.message());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::shared_ptr<const Contract>> out;
  for (const auto& f : files) {
    try {
      out.push_back(std::make_shared<const Contract>(load_contract(f)));
    } catch (const ContractError& e) {
      std::cerr << "opcontract: left out: " << e.what() << "\n";
    }
  }
  return out;
}

std::map<std::string, std::string> not_covered(const std::vector<std::string>& dirs,
                                               const std::vector<std::shared_ptr<const Contract>>& contracts) {
  std::map<std::string, std::string> why;
  for (const auto& d : dirs) why.merge(load_not_covered(d + "/NOT_COVERED"));
  for (const auto& c : contracts)
    if (why.erase(c->op))
      std::cerr << "opcontract: " << c->op << " is listed in a NOT_COVERED file, but " << c->file << " covers it\n";
  return why;
}

std::optional<std::vector<RecordedCall>> load_recordings(const std::vector<std::string>& paths) {
  try {
    return read_recordings(paths);
  } catch (const RecordingError& e) {
    std::cerr << "opcontract: " << e.what() << "\n";
    return std::nullopt;
  }
}

std::string captured_output_line(int lines_in_cases) {
  const int lines = lines_in_cases + count_lines(python::take_startup_output());
  if (lines == 0) return "";
  return "captured " + std::to_string(lines) + " line" + (lines == 1 ? "" : "s") +
         " that the ops and torch printed (warnings, prints): each finding shows those of its case; "
         "--verbose prints them as they come\n";
}

std::string quote(const std::string& s) {
  if (s.find_first_of(" \t'\"$\\") == std::string::npos) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string library_flags(const Args& a) {
  std::string flags;
  for (const auto& l : a.loads) flags += " --load " + quote(l);
  for (const auto& m : a.imports) flags += " --import " + quote(m);
  if (!a.python) flags += " --no-python";
  if (!a.targeted) flags += " --no-targeting";
  if (!a.misuse) flags += " --no-misuse";
  return flags;
}

}  // namespace opc::cli
