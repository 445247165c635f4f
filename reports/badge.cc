#include "reports/badge.h"

#include <cmath>
#include <cstdio>
#include <iterator>
#include <string_view>

#include "reports/markup.h"
#include "reports/op_status.h"
#include "support/json_writer.h"

namespace opc {
namespace {

const char* color_hex(const std::string& color) {
  if (color == "brightgreen") return "#4c1";
  if (color == "orange") return "#fe7d37";
  if (color == "red") return "#e05d44";
  return "#9f9f9f";  // lightgrey
}

// Approximate advance widths of 11px Verdana, the badge font: close enough to size the
// boxes, and textLength makes each text fill its box exactly whatever font renders it.
double char_width(unsigned char c) {
  if (std::string_view("ijl.,:;'!| ").find(c) != std::string_view::npos) return 3.5;
  if (std::string_view("frt()[]-/").find(c) != std::string_view::npos) return 4.5;
  if (c == 'm' || c == 'w' || (c >= 'A' && c <= 'Z')) return 8.5;
  return 6.8;
}

int text_width(std::string_view s) {
  double w = 0;
  for (unsigned char c : s) w += char_width(c);
  return static_cast<int>(std::ceil(w));
}

std::string px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// One side of the badge: a box of `width` at `x`, its text centred, with a faint shadow.
std::string side_text(const std::string& text, int x, int width) {
  const std::string t = xml_escape(text), centre = px(x + width / 2.0), length = px(width - 10);
  return "<text x=\"" + centre + "\" y=\"15\" fill=\"#010101\" fill-opacity=\".3\" textLength=\"" +
         length + "\">" + t + "</text><text x=\"" + centre + "\" y=\"14\" textLength=\"" + length +
         "\">" + t + "</text>";
}

}  // namespace

Badge op_badge(const ContractResult& op) {
  const OpStatus status = op_status(op);
  return {checked_label(op), status.text, status.color};
}

std::string badge_svg(const Badge& b) {
  const int lw = text_width(b.label) + 10, mw = text_width(b.message) + 10, w = lw + mw;
  const std::string title = xml_escape(b.label + ": " + b.message), W = std::to_string(w);
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + W + "\" height=\"20\" role=\"img\" aria-label=\"" +
         title + "\"><title>" + title + "</title>"
         "<linearGradient id=\"s\" x2=\"0\" y2=\"100%\"><stop offset=\"0\" stop-color=\"#bbb\" stop-opacity=\".1\"/>"
         "<stop offset=\"1\" stop-opacity=\".1\"/></linearGradient>"
         "<clipPath id=\"r\"><rect width=\"" + W + "\" height=\"20\" rx=\"3\" fill=\"#fff\"/></clipPath>"
         "<g clip-path=\"url(#r)\"><rect width=\"" + std::to_string(lw) + "\" height=\"20\" fill=\"#555\"/>"
         "<rect x=\"" + std::to_string(lw) + "\" width=\"" + std::to_string(mw) + "\" height=\"20\" fill=\"" +
         color_hex(b.color) + "\"/><rect width=\"" + W + "\" height=\"20\" fill=\"url(#s)\"/></g>"
         "<g fill=\"#fff\" text-anchor=\"middle\" font-family=\"Verdana,Geneva,DejaVu Sans,sans-serif\" "
         "font-size=\"11\">" + side_text(b.label, 0, lw) + side_text(b.message, lw, mw) + "</g></svg>\n";
}

std::string badge_endpoint_json(const Badge& b) {
  JsonWriter w;
  w.begin_object().key("schemaVersion").value(1).key("label").value(b.label).key("message").value(b.message);
  w.key("color").value(b.color).end_object();
  return w.str() + "\n";
}

}  // namespace opc
