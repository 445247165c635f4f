// The views of real traffic held to the contracts (check/traffic.h): a table per op for
// people, ending with the share of calls admitted and the ops that fall short, and JSON for
// machines and for `opcontract report`'s "real calls" column.
//
//   print_traffic(std::cout, t);
//   write_file_atomically("traffic.json", traffic_json(t));
//
// JSON: {"version": 1, "kind": "traffic", "recordings": [...], "ops": [{"op", "calls",
// "signatures", "admitted", "contract" (first covering file, or null), "contracts",
// "not_covered", "rejections": [{"pattern", "calls", "detail", "example", "programs" (the
// recorded programs that made them: a serve sweep's configs), "widen" (the widening they
// are evidence for, or null)}]}]}.
#pragma once

#include <ostream>
#include <string>

#include "check/traffic.h"

namespace opc {

void print_traffic(std::ostream& out, const TrafficResult& t);
std::string traffic_json(const TrafficResult& t);

}  // namespace opc
