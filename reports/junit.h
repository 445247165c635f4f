// The campaign as JUnit XML, for CI test views (Jenkins, GitLab, GitHub actions that read
// JUnit). Valid against the common JUnit schema (Jenkins' junit-10.xsd); tests/junit-10.xsd
// holds the part of it this file uses.
//
//   write_file_atomically("junit.xml", opc::junit_xml(campaign));
//
// One <testsuite> per contract file and target (name: the target, "regression T" for a
// regression; file: the contract).
// A plain check has one <testcase> per clause and mode, named "alias (eager)" (static
// clauses: "schema", "branches"): a <failure> with the finding's message, minimal case and
// replay; a <skipped> with the reason when the mode did not run; a known finding passes,
// its text in <system-out>. A regression has one <testcase>, failing unless it was caught
// as expected. An error is an <error> testcase. No timings are recorded: time is 0.
#pragma once

#include <string>

#include "reports/campaign_report.h"

namespace opc {

std::string junit_xml(const Campaign& campaign);

}  // namespace opc
