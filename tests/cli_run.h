// Runs the opcontract command line as a child process, for the tests of its exit codes
// and output (cli/cli_test.cc, tests/hostile_inputs_test.cc, ...), and any other shell
// command a test needs the output of (run_shell).
//
//   const Result r = run("check contracts/vllm/foo.yaml --cases 50");
//   EXPECT_EQ(r.exit, 2);
//   EXPECT_CONTAINS(r.output, "foo.yaml:3:5:");
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct Result {
  int exit = -1;       // the exit status, or -1 when it did not exit normally
  std::string output;  // stdout, and stderr unless left out
};

// Runs shell text `cmd`, collecting what it prints (with stderr unless left out).
Result run_shell(const std::string& cmd, bool with_stderr = true) {
  const std::string full = cmd + (with_stderr ? " 2>&1" : " 2>/dev/null");
  Result r;
  FILE* pipe = popen(full.c_str(), "r");
  if (!pipe) {
    ADD_FAILURE() << "popen failed: " << full;
    return r;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  if (status != -1 && WIFEXITED(status)) r.exit = WEXITSTATUS(status);
  return r;
}

// Runs `opcontract ARGS` in the repository root (so contracts are named by relative
// paths, as users type them). `args` is shell text: the tests pass only fixed words.
Result run(const std::string& args, bool with_stderr = true) {
  return run_shell("cd " + shell_quote(OPC_SOURCE_DIR) + " && " + shell_quote(OPC_BINARY) + " " + args,
                   with_stderr);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

#define EXPECT_CONTAINS(text, part) \
  EXPECT_TRUE(contains(text, part)) << "lacks '" << (part) << "' in:\n" << (text)

}  // namespace
