// Escaping for the XML, HTML and Markdown the reports write (JUnit, SVG badges, the
// dashboard, summary.md and the results tables).
//
//   out << "<td title=\"" << opc::xml_escape(reason) << "\">";
//   out << "| " << opc::md_code(op) << " | " << opc::md_cell(message) << " |";
#pragma once

#include <string>
#include <string_view>

namespace opc {

// Escapes & < > " ' so the text is safe in element content and in quoted attributes,
// writes tab, newline and carriage return as character references (attributes keep
// them), and drops the other control characters, which XML 1.0 cannot hold at all.
std::string xml_escape(std::string_view s);

// A Markdown inline code span that survives backticks in the text.
std::string md_code(const std::string& s);
// Text that stays inside one Markdown table cell: | escaped, newlines made spaces.
std::string md_cell(const std::string& s);

}  // namespace opc
