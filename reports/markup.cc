#include "reports/markup.h"

#include <algorithm>

namespace opc {

std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      case '\t': out += "&#9;"; break;
      case '\n': out += "&#10;"; break;
      case '\r': out += "&#13;"; break;
      default:
        if (c >= 0x20) out += static_cast<char>(c);
    }
  }
  return out;
}

std::string md_code(const std::string& s) {
  size_t longest = 0, run = 0;
  for (char ch : s) longest = std::max(longest, run = ch == '`' ? run + 1 : 0);
  const std::string fence(longest + 1, '`');
  const bool pad = !s.empty() && (s.front() == '`' || s.back() == '`');
  return fence + (pad ? " " + s + " " : s) + fence;
}

std::string md_cell(const std::string& s) {
  std::string out;
  for (char ch : s) out += ch == '|' ? "\\|" : ch == '\n' ? " " : std::string(1, ch);
  return out;
}

}  // namespace opc
