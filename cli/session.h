// What every command starts from: the op libraries (--load) and Python modules (--import)
// loaded, the embedded Python started when needed, and the contract files read.
//
//   const Session s = open_session(args, command);   // throws UsageError, runtime_error
//   auto contracts = load_contracts(args.contracts);  // nullopt when one did not load
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/args.h"
#include "spec/contract.h"
#include "generators/recording.h"

namespace opc::cli {

struct Command;

struct Session {
  std::string self;                            // argv[0], for the replay commands printed
  std::vector<std::string> ops_before_loads;  // registered before --load and --import
};

// Starts the embedded Python when --import or the command needs it, then loads each
// --load library and imports each --import module.
Session open_session(const Args& a, const Command& command, const char* self);

// The contract files, loaded; nullopt, after printing each one's error, when any fails.
std::optional<std::vector<std::shared_ptr<const Contract>>> load_contracts(const std::vector<std::string>& paths);

// Every *.yaml under the directories (--contracts DIR), loaded; one that does not load is
// reported and left out, so one bad file does not hide the rest. UsageError for a DIR
// that is not a directory.
std::vector<std::shared_ptr<const Contract>> load_contract_dirs(const std::vector<std::string>& dirs);

// The reasons the folders' NOT_COVERED files give, by op; one that names an op some
// contract covers is reported on stderr (the list has gone stale) and left out.
std::map<std::string, std::string> not_covered(const std::vector<std::string>& dirs,
                                               const std::vector<std::shared_ptr<const Contract>>& contracts);

// The recordings (python -m opcontract.record) read and merged; nullopt, after printing
// the broken file and line, when one is not a recording.
std::optional<std::vector<RecordedCall>> load_recordings(const std::vector<std::string>& paths);

// The closing line about what the ops and torch printed and the run kept out of sight
// (warnings, prints; see CheckOptions::capture_output), when there was any: "" otherwise.
std::string captured_output_line(int lines_in_cases);

// `s`, quoted for a shell when it needs to be.
std::string quote(const std::string& s);

// The flags of this run that the replay commands it prints need: --load, --import, and
// those that change which cases are drawn or how they run.
std::string library_flags(const Args& a);

}  // namespace opc::cli
