// A shields-style flat badge per op ("vllm::rms_norm | 4/4 modes"), drawn as SVG, and the
// same badge as a shields.io endpoint JSON, for a README badge served from CI artifacts.
//
//   const opc::Badge b = opc::op_badge(op);   // op: one of opc::op_results(campaign)
//   std::string svg = opc::badge_svg(b), json = opc::badge_endpoint_json(b);
//
// The rule (op_badge), first match wins:
//   error       red         a check of the op ended in an error
//   <clause>    red         the op breaks its contract: the first failing clause found
//   not run         lightgrey   no mode ran at all
//   <mode> not run  lightgrey   the first mode the contract asks for that did not run (e.g.
//                               "cudagraph not run" without a GPU): what ran held, but
//                               conformance is not shown until it runs
//   N/N modes       brightgreen every mode the contract asks for ran and held (known
//                               findings allowed); modes it skips by its own `skip:` do
//                               not count ("4/4 modes", "3/3 modes")
#pragma once

#include <string>

#include "reports/campaign_report.h"

namespace opc {

struct Badge {
  std::string label, message;
  std::string color;  // a shields.io color name: brightgreen, red, lightgrey
};

Badge op_badge(const ReportedResult& op);
std::string badge_svg(const Badge& b);
// {"schemaVersion": 1, "label": ..., "message": ..., "color": ...}
std::string badge_endpoint_json(const Badge& b);

}  // namespace opc
