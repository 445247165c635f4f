// A contracts folder's NOT_COVERED list: ops with their reasons load; a line without a
// reason, a name that is not qualified, an op listed twice are errors at file:line:column.
#include "spec/not_covered.h"

#include <gtest/gtest.h>

#include "spec/source_loc.h"

namespace opc {
namespace {

TEST(NotCovered, OpsWithReasonsLoadCommentsAndBlankLinesSkipped) {
  const auto why = parse_not_covered("# header\n\nvllm::a   needs a GPU\n  vllm::b.out\tFlashInfer only  \n", "N");
  ASSERT_EQ(why.size(), 2u);
  EXPECT_EQ(why.at("vllm::a"), "needs a GPU");
  EXPECT_EQ(why.at("vllm::b.out"), "FlashInfer only");
}

// The error `text` gives, as "line:column: message".
std::string error_of(const std::string& text) {
  try {
    parse_not_covered(text, "N");
  } catch (const ContractError& e) {
    return std::to_string(e.loc().line) + ":" + std::to_string(e.loc().column) + ": " + e.message();
  }
  return "no error";
}

TEST(NotCovered, MistakesAreErrorsAtTheirPlace) {
  EXPECT_EQ(error_of("vllm::a reason\n  vllm::b\n"), "2:3: vllm::b is listed without a reason");
  EXPECT_EQ(error_of("mrope reason\n"), "1:1: 'mrope' is not a qualified op name (ns::name)");
  EXPECT_EQ(error_of("vllm::a x\nvllm::a y\n"), "2:1: vllm::a is listed twice");
}

TEST(NotCovered, AMissingFileIsAnEmptyList) {
  EXPECT_TRUE(load_not_covered("/nonexistent/NOT_COVERED").empty());
}

}  // namespace
}  // namespace opc
