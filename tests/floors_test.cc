// The code's floors (docs/architecture.md, "Floors"): a folder includes only folders on lower
// floors, or itself. The floors are read from docs/architecture.md's table, so the document and
// the rule cannot drift apart; a planted tree shows that an upward include is caught.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// "| 4 | `runners/` | ..." rows: folder -> floor.
std::map<std::string, int> floors_of(const std::string& architecture_md) {
  std::map<std::string, int> floors;
  const std::regex row(R"(^\| *(\d+) *\| *`([a-z_]+)/` *\|)");
  std::stringstream in(architecture_md);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) floors[m[2]] = std::stoi(m[1]);
  }
  return floors;
}

// Every include of a file under a floor's folder that names a folder on a higher floor:
// "file:line: includes X (floor A includes floor B)".
std::vector<std::string> upward_includes(const fs::path& root, const std::map<std::string, int>& floors) {
  std::vector<std::string> found;
  const std::regex include(R"(^\s*#\s*include\s*"([^"/]+)/[^"]*")");
  for (const auto& [folder, floor] : floors) {
    if (!fs::is_directory(root / folder)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / folder)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".h" && ext != ".cc" && ext != ".cu")) continue;
      // A unit test beside the code it tests may include any floor, as tests/ may.
      if (e.path().filename().string().ends_with("_test.cc")) continue;
      std::stringstream in(read(e.path()));
      int n = 0;
      for (std::string line; std::getline(in, line);) {
        ++n;
        std::smatch m;
        if (!std::regex_search(line, m, include)) continue;
        const auto to = floors.find(m[1]);
        if (to == floors.end() || to->first == folder || to->second < floor) continue;
        found.push_back(fs::relative(e.path(), root).string() + ":" + std::to_string(n) + ": includes " +
                        m[0].str().substr(m[0].str().find('"')) + " (" + folder + "/ on floor " +
                        std::to_string(floor) + ", " + to->first + "/ on floor " + std::to_string(to->second) + ")");
      }
    }
  }
  return found;
}

TEST(Floors, ArchitectureNamesEveryFolderOfCode) {
  const std::map<std::string, int> floors = floors_of(read(fs::path(OPC_SOURCE_DIR) / "docs/architecture.md"));
  for (const char* folder : {"support", "spec", "generators", "runners", "oracles", "check", "reports", "cli"})
    EXPECT_TRUE(floors.count(folder)) << folder << "/ has no floor in docs/architecture.md";
}

TEST(Floors, NoIncludeRunsUpward) {
  const fs::path root(OPC_SOURCE_DIR);
  const std::vector<std::string> up = upward_includes(root, floors_of(read(root / "docs/architecture.md")));
  std::string all;
  for (const std::string& u : up) all += "\n  " + u;
  EXPECT_TRUE(up.empty()) << "includes that run up a floor:" << all;
}

TEST(Floors, APlantedUpwardIncludeIsCaught) {
  const fs::path root = fs::path(testing::TempDir()) / "opc_floors_planted";
  fs::remove_all(root);
  fs::create_directories(root / "low");
  fs::create_directories(root / "high");
  std::ofstream(root / "low" / "a.h") << "#pragma once\n#include \"low/b.h\"\n#include \"high/c.h\"\n";
  std::ofstream(root / "high" / "c.h") << "#pragma once\n#include \"low/a.h\"\n";
  const std::map<std::string, int> floors = floors_of("| 1 | `low/` | x |\n| 2 | `high/` | y |\n");
  ASSERT_EQ(floors.size(), 2u);
  EXPECT_EQ(upward_includes(root, floors),
            std::vector<std::string>{"low/a.h:3: includes \"high/c.h\" (low/ on floor 1, high/ on floor 2)"});
}

}  // namespace
