// Guards against hostile contract text, applied before the loader (or yaml-cpp) looks
// at it, so that no input file can crash, hang or exhaust the tool:
//
//   std::string text = read_contract_file(path);   // bounded read, refuses directories
//   check_contract_text(text, path);                 // size, UTF-8, YAML shape
//
// Each refusal is a ContractError naming the file and, where there is one, the place
// (line:column of the first bad byte, of the anchor, of the collection too deep).
// check_contract_text lets yaml-cpp's own syntax errors through as YAML::Exception, so
// the loader reports them as it reports those of YAML::Load.
#pragma once

#include <cstddef>
#include <string>

#include "spec/source_loc.h"

namespace opc {

// A contract file is at most 1 MiB; real ones are a few KiB.
inline constexpr size_t kMaxContractBytes = size_t{1} << 20;
// Lists and mappings nest at most 64 deep (contracts need about 5); yaml-cpp's parser
// recurses once per level.
inline constexpr int kMaxYamlDepth = 64;
// One list or mapping holds at most 1024 entries: the loader's look-ups are linear.
inline constexpr int kMaxYamlEntries = 1024;
// A schema's brackets nest at most 16 deep (real ones: 3); PyTorch's schema parser
// recurses once per level and overflows the stack on a few thousand.
inline constexpr int kMaxSchemaDepth = 16;

// The file's bytes; never reads more than kMaxContractBytes + 1 of them.
std::string read_contract_file(const std::string& path);

// Refuses text over kMaxContractBytes; bytes that are not UTF-8 text (invalid sequences,
// NUL, control characters other than tab, newline, carriage return); and YAML with
// anchors or aliases (&a, *a: an alias bomb), nesting deeper than kMaxYamlDepth, a list
// or mapping over kMaxYamlEntries, or more than one document.
void check_contract_text(const std::string& text, const std::string& file);

// Refuses a schema string nested deeper than kMaxSchemaDepth, at the bracket that goes
// too deep; `at` is where the schema's text starts.
void check_schema_nesting(const std::string& schema, const SourceLoc& at);

}  // namespace opc
