// The campaign's pages for people: summary.md (every op, mode, failed clause, finding with
// its minimal case and replay, branch coverage, regressions) and index.html, a one-page
// static dashboard (inline CSS, nothing fetched) with one row per op, id "op-<sanitized
// op>", its mode cells colored, and its badge (badges/<sanitized op>.svg).
//
//   write_file_atomically("summary.md", opc::summary_markdown(campaign));
//   write_file_atomically("index.html", opc::dashboard_html(campaign));
#pragma once

#include <string>

#include "reports/campaign_report.h"

namespace opc {

std::string summary_markdown(const Campaign& campaign);
std::string dashboard_html(const Campaign& campaign);

}  // namespace opc
