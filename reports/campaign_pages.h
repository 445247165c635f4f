// The campaign's pages for people, both opening with how many ops conform, have known
// defects, fail or did not run, per build or version checked, in the words of the op's
// status (reports/op_status.h), and listing ops the worst first (errors, fails, known
// defects, not run, conforms):
// - summary.md: every op with its modes and status, every finding with its minimal case,
//   what the op printed on it and its replay command, branch coverage, regressions;
// - index.html: a static one-page dashboard (inline CSS, a few lines of inline script,
//   nothing fetched): a row per op (id "op-<sanitized op>") with its mode cells coloured and
//   its status (with a link to its findings), and under it the op's findings folded in a <details> (id
//   "findings-<sanitized op>"; open for failing ops, and for the one the URL's #fragment
//   names): clause, mode, message, minimal case, a known finding's reason, what the op
//   printed, and the replay command, selected whole with one click.
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
