#include "spec/text_guard.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

namespace opc {
namespace {

std::string size_cap_text() {
  return std::to_string(kMaxContractBytes) + " bytes (1 MiB)";
}

std::string hex_byte(unsigned char b) {
  static const char digits[] = "0123456789abcdef";
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

// Length of the UTF-8 sequence at s[i] (1 to 4), or 0 where it is not valid UTF-8:
// stray continuation bytes, overlong forms, surrogates, code points past U+10FFFF, a
// sequence cut short.
size_t utf8_length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) -> unsigned {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u;
  };
  auto follows = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) {
    return byte(k) >= lo && byte(k) <= hi;
  };
  const unsigned b0 = byte(0);
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return follows(1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF)
    return follows(1, b0 == 0xE0 ? 0xA0 : 0x80, b0 == 0xED ? 0x9F : 0xBF) && follows(2) ? 3 : 0;
  if (b0 >= 0xF0 && b0 <= 0xF4)
    return follows(1, b0 == 0xF0 ? 0x90 : 0x80, b0 == 0xF4 ? 0x8F : 0xBF) && follows(2) &&
                   follows(3)
               ? 4
               : 0;
  return 0;
}

bool is_control(unsigned char b) {
  return (b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7F;
}

// The first byte that makes `text` something other than UTF-8 text, at its line and
// column (counted in characters).
void check_encoding(std::string_view text, const std::string& file) {
  int line = 1, column = 1;
  for (size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    const size_t n = utf8_length(text, i);
    std::string why;
    if (n == 0) why = "byte " + hex_byte(b) + " is not valid UTF-8";
    else if (b == 0) why = "a NUL byte";
    else if (is_control(b)) why = "control character " + hex_byte(b);
    if (!why.empty())
      throw ContractError({file, line, column},
                          "not UTF-8 text: " + why + " (a contract is a UTF-8 YAML file)");
    if (b == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    i += n;
  }
}

// Walks yaml-cpp's parse events (no nodes are built) and refuses what a contract never
// needs but a hostile file uses: anchors and aliases, deep nesting, huge collections,
// further documents. Throwing from an event stops yaml-cpp's recursion right there.
class ShapeCheck : public YAML::EventHandler {
 public:
  explicit ShapeCheck(const std::string& file) : file_(file) {}

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (documents_++ > 0)
      fail(mark, "a second YAML document starts here; a contract file holds one");
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { entry(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    entry(mark);
  }
  // An alias needs an anchor before it, so the anchor is what gets reported.
  void OnAnchor(const YAML::Mark& mark, const std::string& name) override {
    fail(mark, "YAML anchor '&" + name + "': " + kNoAnchors);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    fail(mark, std::string("YAML alias: ") + kNoAnchors);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    open(mark, false);
  }
  void OnSequenceEnd() override { open_.pop_back(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    open(mark, true);
  }
  void OnMapEnd() override { open_.pop_back(); }

 private:
  static constexpr const char* kNoAnchors =
      "anchors and aliases are not allowed in a contract (write each value out)";

  struct Open {
    bool map;
    int nodes;  // keys and values of a mapping, items of a list
  };

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& message) const {
    throw ContractError({file_, mark.line + 1, mark.column + 1}, message);
  }
  void entry(const YAML::Mark& mark) {
    if (open_.empty()) return;
    Open& o = open_.back();
    const int entries = o.map ? (++o.nodes + 1) / 2 : ++o.nodes;
    if (entries > kMaxYamlEntries)
      fail(mark, std::string("more than ") + std::to_string(kMaxYamlEntries) + " entries in one " +
                     (o.map ? "mapping" : "list"));
  }
  void open(const YAML::Mark& mark, bool map) {
    entry(mark);
    if (static_cast<int>(open_.size()) == kMaxYamlDepth)
      fail(mark, "lists and mappings nested more than " + std::to_string(kMaxYamlDepth) +
                     " deep");
    open_.push_back({map, 0});
  }

  const std::string& file_;
  int documents_ = 0;
  std::vector<Open> open_;
};

}  // namespace

std::string read_contract_file(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status))
    throw ContractError({path, 0, 0}, "is a directory, not a contract file");
  if (std::filesystem::is_regular_file(status)) {
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size > kMaxContractBytes)
      throw ContractError({path, 0, 0}, "the contract file is " + std::to_string(size) +
                                            " bytes, over the limit of " + size_cap_text());
  }
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ContractError({path, 0, 0},
                        std::string("cannot read the contract file (") + std::strerror(errno) + ")");
  // Bounded even where the size is unknown or changes (a pipe, a device, a growing file).
  std::string text(kMaxContractBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxContractBytes)
    throw ContractError({path, 0, 0}, "the contract file is over the limit of " + size_cap_text());
  return text;
}

void check_schema_nesting(const std::string& schema, const SourceLoc& at) {
  int depth = 0;
  for (size_t i = 0; i < schema.size(); ++i) {
    const char c = schema[i];
    if (c == ')' || c == ']') --depth;
    if ((c == '(' || c == '[') && ++depth > kMaxSchemaDepth)
      throw ContractError(at.shifted(static_cast<int>(i)),
                          "the schema nests brackets more than " +
                              std::to_string(kMaxSchemaDepth) + " deep");
  }
}

void check_contract_text(const std::string& text, const std::string& file) {
  if (text.size() > kMaxContractBytes)
    throw ContractError({file, 0, 0}, "the contract is " + std::to_string(text.size()) +
                                          " bytes, over the limit of " + size_cap_text());
  check_encoding(text, file);
  std::istringstream in(text);
  YAML::Parser parser(in);
  ShapeCheck check(file);
  while (parser.HandleNextDocument(check)) {
  }
}

}  // namespace opc
