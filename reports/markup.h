// Escaping for the XML and HTML the reports write (JUnit, SVG badges, the dashboard).
//
//   out << "<td title=\"" << opc::xml_escape(reason) << "\">";
#pragma once

#include <string>
#include <string_view>

namespace opc {

// Escapes & < > " ' so the text is safe in element content and in quoted attributes,
// writes tab, newline and carriage return as character references (attributes keep
// them), and drops the other control characters, which XML 1.0 cannot hold at all.
std::string xml_escape(std::string_view s);

}  // namespace opc
