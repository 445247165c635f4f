// Hostile inputs: every one is a clear ContractError (exit 2 on the command line) naming
// the file and, where there is one, line:column; never a crash, a hang or a huge
// allocation. One group per class: alias bombs, deep nesting, huge files, bytes that are
// not UTF-8 text, hostile schemas, expressions that overflow, divide by zero or nest
// deeply, dims that make huge tensors, and --load of what is not a library. The last
// group holds inputs the parser fuzzers (fuzz/) found.
#include <gtest/gtest.h>
#include <rapidcheck/Random.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "spec/contract_loader.h"
#include "spec/text_guard.h"
#include "generators/case_gen.h"
#include "generators/dim_gen.h"
#include "tests/cli_run.h"

namespace opc {
namespace {

const char* kFile = "t.yaml";
const std::string kHead = "op: a::f\nschema: \"f(Tensor x) -> Tensor\"\n";

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// The error loading `text` gives: a test failure when it loads or throws anything else.
ContractError load_error(const std::string& text) {
  try {
    load_contract_text(text, kFile);
    ADD_FAILURE() << "loaded without error:\n" << text.substr(0, 400);
  } catch (const ContractError& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw something else than ContractError: " << e.what();
  }
  return ContractError({}, "");
}

#define EXPECT_LOAD_ERROR(text, where, part)                                   \
  do {                                                                         \
    const ContractError e_ = load_error(text);                                 \
    EXPECT_EQ(to_string(e_.loc()), where) << e_.what();                        \
    EXPECT_NE(e_.message().find(part), std::string::npos) << e_.what();        \
  } while (0)

// A file of its own under a temporary directory, for load_contract and the CLI.
std::string temp_file(const std::string& name, const std::string& content) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("opc-hostile-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

double seconds_to_load(const std::string& text) {
  const auto t0 = std::chrono::steady_clock::now();
  load_error(text);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A loadable contract with these dims (YAML lines) and x's shape.
std::string with_dims(const std::string& dims, const std::string& shape) {
  return kHead + "dims:\n" + dims + "args:\n  x: {dtype: float32, shape: [" + shape + "]}\n";
}

// The first case the generator draws for `text`, at RapidCheck size `size`.
Case first_case(const std::string& text, int size = 50) {
  auto contract = std::make_shared<const Contract>(load_contract_text(text, kFile));
  return case_gen(contract)(rc::Random(20261202), size).value();
}

// The error drawing the first case for `text` gives.
ContractError generation_error(const std::string& text) {
  try {
    first_case(text);
    ADD_FAILURE() << "generated a case for:\n" << text;
  } catch (const ContractError& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw something else than ContractError: " << e.what();
  }
  return ContractError({}, "");
}

// ---------------------------------------------------------------------------------------
// 1. Alias bombs: anchors and aliases are refused outright, before anything walks them

TEST(HostileYaml, BillionLaughsIsRefusedAtItsFirstAnchorAtOnce) {
  std::string bomb = "l0: &l0 [" + repeat("\"lol\", ", 9) + "\"lol\"]\n";
  for (int i = 1; i < 9; ++i)
    bomb += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [" +
            repeat("*l" + std::to_string(i - 1) + ", ", 9) + "*l" + std::to_string(i - 1) + "]\n";
  const std::string text = bomb + kHead + "args:\n  x: {dtype: float32, shape: *l8}\n";
  EXPECT_LOAD_ERROR(text, "t.yaml:1:5", "YAML anchor '&l0': anchors and aliases are not allowed");
  EXPECT_LT(seconds_to_load(text), 2.0);
}

TEST(HostileYaml, AnchorAnywhereIsRefused) {
  EXPECT_LOAD_ERROR(kHead + "args:\n  x: &x {dtype: float32, shape: [1]}\n", "t.yaml:4:6",
                    "YAML anchor '&x'");
  EXPECT_LOAD_ERROR(kHead + "args: {x: {dtype: float32, shape: [&n 1]}}\n", "t.yaml:3:36",
                    "YAML anchor '&n'");
}

TEST(HostileYaml, AliasBombFixtureExitsTwo) {
  const Result r = run("check tests/hostile/alias_bomb.yaml");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "tests/hostile/alias_bomb.yaml:3:5: YAML anchor '&l0'");
}

// ---------------------------------------------------------------------------------------
// 2. Deep nesting: refused past 64 levels, before yaml-cpp's recursive parser goes deeper

TEST(HostileYaml, DeepFlowNestingIsRefusedAtTheLevelTooDeep) {
  // 100k levels: yaml-cpp alone says "bad file" at 1:1 (its own guard, ~500 levels).
  const std::string text = kHead + "args: " + repeat("[", 100000) + repeat("]", 100000) + "\n";
  // `args:`'s mapping is level 1, so the 64th '[' (column 7 + 63) is level 65.
  EXPECT_LOAD_ERROR(text, "t.yaml:3:70", "lists and mappings nested more than 64 deep");
  EXPECT_LT(seconds_to_load(text), 2.0);
}

TEST(HostileYaml, DeepBlockNestingIsRefusedAtTheLevelTooDeep) {
  std::string text = kHead;
  for (int i = 0; i < 200; ++i) text += std::string(2 * i, ' ') + "k:\n";
  // The mapping of level n starts on line 2 + n, at column 2n - 1.
  EXPECT_LOAD_ERROR(text, "t.yaml:67:129", "nested more than 64 deep");
}

TEST(HostileYaml, SixtyFourLevelsAreAllowed) {
  // The top-level mapping and 63 lists: the loader itself rejects the key.
  EXPECT_LOAD_ERROR("x: " + repeat("[", 63) + repeat("]", 63) + "\n", "t.yaml:1:1",
                    "unknown key 'x'");
}

TEST(HostileYaml, HugeCollectionsAreRefused) {
  std::string list = "[0";
  for (int i = 1; i < 1025; ++i) list += ", " + std::to_string(i % 10);
  // Item i is at column 36 + 3i.
  EXPECT_LOAD_ERROR(kHead + "args: {x: {dtype: float32, shape: " + list + "]}}\n", "t.yaml:3:3108",
                    "more than 1024 entries in one list");
  std::string map = kHead + "dims:\n";
  for (int i = 0; i < 1025; ++i) map += "  d" + std::to_string(i) + ": 1\n";
  EXPECT_LOAD_ERROR(map, "t.yaml:1028:3", "more than 1024 entries in one mapping");
}

TEST(HostileYaml, OneDocumentOnly) {
  EXPECT_LOAD_ERROR(kHead + "args: {}\n---\nop: b::g\n", "t.yaml:4:1",
                    "a second YAML document starts here");
}

TEST(HostileYaml, KeysMustBeNames) {
  EXPECT_LOAD_ERROR(kHead + "[a, b]: 1\n", "t.yaml:3:1", "a key in the contract must be a name");
  EXPECT_LOAD_ERROR(kHead + "args: {{x: 1}: 2}\n", "t.yaml:3:8", "a key in args must be a name");
}

// ---------------------------------------------------------------------------------------
// 3. Huge files: refused before they are read in full

TEST(HostileFile, TextOverTheCapIsRefused) {
  const std::string text = kHead + "# " + std::string(kMaxContractBytes, 'x') + "\n";
  EXPECT_LOAD_ERROR(text, "t.yaml",
                    "the contract is " + std::to_string(text.size()) +
                        " bytes, over the limit of 1048576 bytes (1 MiB)");
}

TEST(HostileFile, FileOverTheCapIsRefusedNamingItsSize) {
  const std::string path = temp_file("huge.yaml", kHead + "# " + std::string(2 << 20, 'x') + "\n");
  try {
    load_contract(path);
    ADD_FAILURE() << "loaded a 2 MiB contract";
  } catch (const ContractError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": the contract file is " +
                                         std::to_string(std::filesystem::file_size(path)) +
                                         " bytes, over the limit of 1048576 bytes (1 MiB)");
  }
  const Result r = run("check " + shell_quote(path));
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "over the limit of 1048576 bytes (1 MiB)");
}

TEST(HostileFile, EndlessDeviceIsReadOnlyUpToTheCap) {
  try {
    load_contract("/dev/zero");
    ADD_FAILURE() << "loaded /dev/zero";
  } catch (const ContractError& e) {
    EXPECT_EQ(std::string(e.what()),
              "/dev/zero: the contract file is over the limit of 1048576 bytes (1 MiB)");
  }
}

TEST(HostileFile, DirectoryIsNotAContract) {
  try {
    load_contract(OPC_SOURCE_DIR);
    ADD_FAILURE() << "loaded a directory";
  } catch (const ContractError& e) {
    EXPECT_EQ(e.message(), "is a directory, not a contract file");
  }
  const Result r = run("check tests/hostile");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "tests/hostile: is a directory, not a contract file");
}

// ---------------------------------------------------------------------------------------
// 4. Binary garbage and bytes that are not UTF-8 text

TEST(HostileBytes, InvalidUtf8NamesTheFirstBadByte) {
  EXPECT_LOAD_ERROR("op: a::f\nsch\xff" "ema: x\n", "t.yaml:2:4",
                    "not UTF-8 text: byte 0xff is not valid UTF-8");
  // Columns count characters: "  é: " is five.
  EXPECT_LOAD_ERROR("op: a::f\n  \xc3\xa9: \xe9t\xe9\n", "t.yaml:2:6", "byte 0xe9 is not valid UTF-8");
}

TEST(HostileBytes, MalformedSequencesAreRefused) {
  for (const char* bad : {"\xc0\xaf",           // overlong '/'
                          "\xed\xa0\x80",       // a UTF-16 surrogate
                          "\xf4\x90\x80\x80",   // past U+10FFFF
                          "\x80",               // a stray continuation byte
                          "\xe2\x82"}) {        // cut short at the end
    const ContractError e = load_error(std::string("op: ") + bad);
    EXPECT_EQ(to_string(e.loc()), "t.yaml:1:5") << e.what();
    EXPECT_EQ(e.message().rfind("not UTF-8 text: byte 0x", 0), 0u) << e.what();
  }
}

TEST(HostileBytes, NulAndControlCharactersAreRefused) {
  EXPECT_LOAD_ERROR(std::string("op: a::f\n  \0x", 12), "t.yaml:2:3", "not UTF-8 text: a NUL byte");
  EXPECT_LOAD_ERROR("op: a\x07::f\n", "t.yaml:1:6", "not UTF-8 text: control character 0x07");
}

TEST(HostileBytes, ValidUtf8TextIsLoadedAsUsual) {
  // A byte-order mark, two- to four-byte characters, CRLF line ends.
  EXPECT_LOAD_ERROR("\xef\xbb\xbf# caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\r\nop: a::f\r\n",
                    "t.yaml:2:1", "missing key 'schema'");
}

TEST(HostileBytes, RandomBinaryGarbageIsAContractError) {
  uint64_t s = 1;
  for (int round = 0; round < 50; ++round) {
    std::string garbage(4096, '\0');
    for (char& c : garbage) c = static_cast<char>((s = s * 6364136223846793005ull + 1) >> 56);
    EXPECT_EQ(load_error(garbage).message().rfind("not UTF-8 text", 0), 0u);
  }
}

TEST(HostileBytes, NotUtf8FixtureExitsTwo) {
  const Result r = run("check tests/hostile/not_utf8.yaml");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "tests/hostile/not_utf8.yaml:2:14: not UTF-8 text: byte 0xe9");
}

// ---------------------------------------------------------------------------------------
// Schemas: PyTorch's schema parser recurses per bracket and overflows the stack on a few
// thousand (a segfault before the guard)

TEST(HostileSchema, DeepNestingIsRefusedAtTheBracketTooDeep) {
  const std::string text = "op: a::f\nschema: \"f(" + repeat("(", 5000) + "int" + repeat(")", 5000) +
                           " x) -> Tensor\"\nargs: {}\n";
  // The schema's text starts at column 10; its 17th '(' is 17 characters in.
  EXPECT_LOAD_ERROR(text, "t.yaml:2:27", "the schema nests brackets more than 16 deep");
  const std::string path = temp_file("deep_schema.yaml", text);
  const Result r = run("check " + shell_quote(path));
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "deep_schema.yaml:2:27: the schema nests brackets more than 16 deep");
}

TEST(HostileSchema, SixteenLevelsReachPyTorchsParser) {
  EXPECT_LOAD_ERROR("op: a::f\nschema: \"f(" + repeat("(", 15) + "int" + repeat(")", 15) +
                        " x) -> Tensor\"\nargs: {}\n",
                    "t.yaml:3:7", "schema argument 'x'");
}

// ---------------------------------------------------------------------------------------
// 5. Expressions: overflow, division by zero, deep nesting, self-reference

TEST(HostileExpr, OverflowIsAnErrorAtTheDim) {
  const ContractError e = generation_error(with_dims("  n: \"9223372036854775807 + 1\"\n", "n"));
  EXPECT_EQ(to_string(e.loc()), "t.yaml:4:3");
  EXPECT_EQ(e.message(), "dims.n: integer overflow in '9223372036854775807 + 1': "
                         "9223372036854775807 + 1");
  const ContractError m = generation_error(with_dims("  a: 4294967296\n  n: a * a\n", "n"));
  EXPECT_EQ(m.message(), "dims.n: integer overflow in 'a * a': 4294967296 * 4294967296");
}

TEST(HostileExpr, ShapeOverflowIsAnErrorAtTheArgument) {
  const ContractError e = generation_error(with_dims("  a: 4611686018427387904\n", "a + a"));
  EXPECT_EQ(to_string(e.loc()), "t.yaml:6:6");
  EXPECT_NE(e.message().find("args.x.shape: integer overflow in 'a + a'"), std::string::npos);
}

TEST(HostileExpr, OverflowFixtureExitsTwo) {
  const Result r = run("check tests/hostile/overflow.yaml");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "tests/hostile/overflow.yaml:10:3: dims.seq_len: integer overflow in "
                            "'9223372036854775807 + 1'");
}

TEST(HostileExpr, HugeLiteralIsRefusedAtLoad) {
  EXPECT_LOAD_ERROR(with_dims("  n: 99999999999999999999\n", "n"), "t.yaml:4:6",
                    "integer literal too large");
}

TEST(HostileExpr, DivisionAndModuloByZeroAreErrorsAtTheDim) {
  EXPECT_EQ(generation_error(with_dims("  n: {range: [0, \"1 / 0\"]}\n", "n")).message(),
            "dims.n: division by zero in '1 / 0': 1 / 0");
  EXPECT_EQ(generation_error(with_dims("  m: 0\n  n: {choose: [\"5 % m\"]}\n", "n")).message(),
            "dims.n: division by zero in '5 % m': 5 % 0");
  EXPECT_EQ(generation_error(with_dims("  m: 0\n", "\"ceil_div(4, m)\"")).message(),
            "args.x.shape: division by zero in 'ceil_div(4, m)': ceil_div(4, 0)");
}

TEST(HostileExpr, DeepNestingIsRefusedAtLoad) {
  EXPECT_LOAD_ERROR(with_dims("  n: \"" + repeat("(", 10000) + "1" + repeat(")", 10000) + "\"\n", "n"),
                    "t.yaml:4:7", "expression too long (20001 characters; the limit is 4096)");
  EXPECT_LOAD_ERROR(with_dims("  n: \"" + repeat("(", 100) + "1" + repeat(")", 100) + "\"\n", "n"),
                    "t.yaml:4:71", "expression nested too deeply (the limit is 64 levels)");
  EXPECT_LOAD_ERROR(with_dims("  n: \"" + repeat("-", 2000) + "1\"\n", "n"), "t.yaml:4:71",
                    "expression nested too deeply");
}

TEST(HostileExpr, DimsCannotReferToThemselvesOrEachOther) {
  EXPECT_LOAD_ERROR(with_dims("  n: {range: [0, n]}\n", "n"), "t.yaml:4:18", "unknown name 'n'");
  EXPECT_LOAD_ERROR(with_dims("  a: {range: [0, n]}\n  n: {range: [0, a]}\n", "n"), "t.yaml:4:18",
                    "unknown name 'n'");
}

TEST(HostileExpr, EmptyRangeIsAnErrorAtTheDim) {
  const ContractError e = generation_error(with_dims("  n: {range: [5, 3]}\n", "n"));
  EXPECT_EQ(std::string(e.what()), "t.yaml:4:3: dims.n: the range is empty: [5, 3]");
}

// The whole int64 range once made dim_gen take a remainder by zero (SIGFPE) at size 100,
// and extreme favoured families overflowed its arithmetic.
TEST(HostileExpr, FullInt64RangesDrawInRange) {
  const std::vector<Family> families = {
      [](int64_t k) { return std::optional<int64_t>(k - INT64_MAX); },
      [](int64_t k) { return std::optional<int64_t>(INT64_MIN + k * 3); },
      [](int64_t k) { return k < 3 ? std::optional<int64_t>(k * (INT64_MAX / 2)) : std::nullopt; }};
  for (auto [lo, hi] : {std::pair{INT64_MIN, INT64_MAX}, std::pair{int64_t{0}, INT64_MAX},
                        std::pair{INT64_MIN, int64_t{0}}, std::pair{int64_t{-5}, int64_t{5}}}) {
    const rc::Gen<int64_t> gen = dim_gen(lo, hi, families);
    rc::Random random(7);
    for (int i = 0; i < 2000; ++i) {
      const rc::Shrinkable<int64_t> s = gen(random.split(), i % 101);
      EXPECT_GE(s.value(), lo);
      EXPECT_LE(s.value(), hi);
      int shrinks = 0;
      for (auto seq = s.shrinks(); auto next = seq.next();)
        if (++shrinks > 8) break;
        else EXPECT_GE(next->value(), lo);
    }
  }
}

TEST(HostileExpr, FullRangeDimDoesNotCrashTheCheck) {
  const Result r = run("check tests/hostile/full_range_dim.yaml --cases 150");
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output, "HOLDS");
}

// ---------------------------------------------------------------------------------------
// 6. Case sizes: dims that make huge tensors are refused before anything is allocated

TEST(HostileSize, TenToTheTwelveElementsIsRefused) {
  const ContractError e = generation_error(with_dims("  a: 1000000\n  b: 1000000\n", "a, b"));
  EXPECT_EQ(to_string(e.loc()), "t.yaml:7:6");
  // The case is described as drawn, its edge values' form included.
  EXPECT_EQ(e.message().rfind("args.x: the dims allow a case too large to run (a=1000000 b=1000000 | "
                              "x: float32[1000000, 1000000] contiguous", 0), 0u) << e.message();
  EXPECT_CONTAINS(e.message(), "): its tensors take 1000000000000 elements, over the limit of 268435456 "
                               "(2^28) per case; narrow the dims' ranges");
}

TEST(HostileSize, TheCapIsInclusiveAndCountsEveryTensor) {
  EXPECT_EQ(first_case(with_dims("  n: 268435456\n", "n")).values[0], 268435456);
  EXPECT_NE(generation_error(with_dims("  n: 268435457\n", "n")).message().find("268435457 elements"),
            std::string::npos);
  const std::string two = "op: a::f\nschema: \"f(Tensor x, Tensor y) -> Tensor\"\ndims:\n"
                          "  n: 134217729\nargs:\n  x: {dtype: float32, shape: [n]}\n"
                          "  y: {dtype: float32, shape: [n]}\n";
  const ContractError e = generation_error(two);
  EXPECT_EQ(to_string(e.loc()), "t.yaml:7:6");  // y brings the case over the cap
  EXPECT_NE(e.message().find("268435458 elements"), std::string::npos) << e.what();
}

// A range that reaches past the cap is not an error while smaller values exist: a draw too
// large is drawn again, so a contract can range over every value its op takes.
TEST(HostileSize, ARangePastTheCapDrawsAgainInsteadOfRefusing) {
  const std::shared_ptr<const Contract> c =
      std::make_shared<const Contract>(load_contract_text(with_dims("  n: {range: [1, 536870912]}\n", "n"), "t.yaml"));
  const rc::Gen<Case> gen = case_gen(c);
  rc::Random master(3);
  int64_t largest = 0;
  for (int i = 0; i < 300; ++i) largest = std::max(largest, gen(master.split(), 100).value().values[0]);
  EXPECT_LE(largest, 268435456);
  EXPECT_GT(largest, 1 << 20) << "large values still come";
}

TEST(HostileSize, ZeroSizesStillCountTheirOtherDims) {
  // Nothing to allocate, but strides of 10^20 would overflow.
  const ContractError e =
      generation_error(with_dims("  z: 0\n  b: 10000000000\n", "z, b, b"));
  EXPECT_NE(e.message().find("its tensors take 2^63 or more elements"), std::string::npos)
      << e.what();
}

TEST(HostileSize, HugeTensorFixtureExitsTwoWithoutAllocating) {
  const Result r = run("check tests/hostile/huge_tensor.yaml");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "tests/hostile/huge_tensor.yaml:13:6: args.x: the dims allow a case "
                            "too large to run");
}

// ---------------------------------------------------------------------------------------
// 7. --load of what is not a shared library (a text file: CliLoad.NotASharedLibrary)

TEST(HostileLoad, DirectoryIsNotALibrary) {
  const Result r = run("check contracts/vllm/sequence_parallel_chunk_impl.yaml --load tests");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "--load tests: cannot load it as a shared library");
}

TEST(HostileLoad, MissingLibrary) {
  const Result r =
      run("check contracts/vllm/sequence_parallel_chunk_impl.yaml --load tests/hostile/no_such.so");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "--load tests/hostile/no_such.so: cannot load it as a shared library");
  EXPECT_CONTAINS(r.output, "No such file or directory");
}

TEST(HostileLoad, ContractFileIsNotALibrary) {
  const Result r = run("list --load tests/hostile/huge_tensor.yaml");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "--load tests/hostile/huge_tensor.yaml: cannot load it as a shared "
                            "library");
}

}  // namespace
}  // namespace opc
