// The catalogue of clauses and modes: every clause a finding can name and every mode a
// check runs, each in one table. The loader's keys (known_findings' `clause:` and `mode:`,
// `modes:`, `skip:`), the judge's plan (which clauses each mode judges for a contract) and
// the reports' rows all come from these tables, so a clause is added in one row
// (docs/architecture.md, "Adding a clause"), the way c10's ScalarType list makes both
// its enum and its names.
//
//   for (const ClauseInfo& c : kClauses) ... c.id, c.modes, c.stated_by
//   std::optional<Clause> k = clause_named("alias");   // to_string(*k) == "alias"
//   bool judged = clause_info(Clause::Padding).modes.has(Mode::Compiled);
//
// Whether a contract asks for a clause that only some contracts state is
// `asks_for(contract, clause)` (spec/contract.h); what a run judged is recorded in its
// result per mode (check/result.h), which reports render without restating a rule.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace opc {

// ---------------------------------------------------------------------------------------
// Modes

enum class Mode : uint8_t { Fake, Eager, Compiled, Cudagraph };
inline constexpr Mode kAllModes[] = {Mode::Fake, Mode::Eager, Mode::Compiled, Mode::Cudagraph};

const char* to_string(Mode mode);  // "fake", "eager", "compiled", "cudagraph"
std::optional<Mode> mode_named(std::string_view name);
inline std::ostream& operator<<(std::ostream& out, Mode m) { return out << to_string(m); }
// " (eager)" after a clause in messages; "" for none (a static clause, any mode).
std::string mode_note(const std::optional<Mode>& m);

// A set of modes, constexpr: {Mode::Eager, Mode::Compiled}.
class ModeSet {
 public:
  constexpr ModeSet() = default;
  constexpr ModeSet(std::initializer_list<Mode> modes) {
    for (Mode m : modes) bits_ |= bit(m);
  }
  constexpr bool has(Mode m) const { return (bits_ & bit(m)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr void add(Mode m) { bits_ |= bit(m); }
  constexpr void remove(Mode m) { bits_ &= static_cast<uint8_t>(~bit(m)); }
  constexpr bool operator==(const ModeSet&) const = default;

 private:
  static constexpr uint8_t bit(Mode m) { return static_cast<uint8_t>(1u << static_cast<unsigned>(m)); }
  uint8_t bits_ = 0;
};

// How a result says a mode did not run because the contract's `skip:` leaves it out
// (its reason follows), as opposed to a machine that cannot run it.
inline constexpr const char kSkippedByContract[] = "skipped by the contract";

// ---------------------------------------------------------------------------------------
// Clauses

// The contract key that makes a contract ask for a clause only some contracts state.
// (Deterministic: every contract but one with `determinism: none`.)
enum class StatedBy : uint8_t { Always, Reference, Requires, Padding, Donates, Finite, Forms, Deterministic };

// Where a clause is judged: by an oracle (oracles/<id>.cc, called from check/case_judge.cc)
// or by the check pipeline itself (a crash, a branch never hit, the schema compared once).
enum class JudgedBy : uint8_t { Oracle, Pipeline };

// Every clause: Name, id (as findings, contracts and reports spell it), the modes whose
// runs judge it (none: judged once per check, not per case), what states it, where it is
// judged. One row per clause; the order is the reports' row order.
#define OPC_FORALL_CLAUSES(_)                                                                          \
  _(Schema, "schema", ModeSet{}, StatedBy::Always, JudgedBy::Oracle)                                   \
  _(Alias, "alias", (ModeSet{Mode::Eager, Mode::Fake}), StatedBy::Always, JudgedBy::Oracle)            \
  _(Mutation, "mutation", ModeSet{Mode::Eager}, StatedBy::Always, JudgedBy::Oracle)                    \
  _(Write, "write", ModeSet{Mode::Eager}, StatedBy::Always, JudgedBy::Oracle)                          \
  _(Extent, "extent", ModeSet{Mode::Eager}, StatedBy::Always, JudgedBy::Oracle)                        \
  _(Crash, "crash", (ModeSet{Mode::Eager, Mode::Cudagraph}), StatedBy::Always, JudgedBy::Pipeline)     \
  _(Fake, "fake", ModeSet{Mode::Fake}, StatedBy::Always, JudgedBy::Oracle)                             \
  _(Padding, "padding", (ModeSet{Mode::Eager, Mode::Compiled}), StatedBy::Padding, JudgedBy::Oracle)   \
  _(Determinism, "determinism", ModeSet{Mode::Eager}, StatedBy::Deterministic, JudgedBy::Oracle)       \
  _(Reads, "reads", ModeSet{Mode::Eager}, StatedBy::Deterministic, JudgedBy::Oracle)                   \
  _(Compiled, "compiled", ModeSet{Mode::Compiled}, StatedBy::Always, JudgedBy::Oracle)                 \
  _(Cudagraph, "cudagraph", ModeSet{Mode::Cudagraph}, StatedBy::Always, JudgedBy::Oracle)              \
  _(Precondition, "precondition", ModeSet{Mode::Eager}, StatedBy::Requires, JudgedBy::Oracle)          \
  _(Reference, "reference", ModeSet{Mode::Eager}, StatedBy::Reference, JudgedBy::Oracle)               \
  _(Donation, "donation", (ModeSet{Mode::Eager, Mode::Compiled}), StatedBy::Donates, JudgedBy::Oracle) \
  _(Misuse, "misuse", ModeSet{Mode::Eager}, StatedBy::Always, JudgedBy::Oracle)                        \
  _(Finite, "finite", ModeSet{Mode::Eager}, StatedBy::Finite, JudgedBy::Oracle)                        \
  _(Forms, "forms", ModeSet{Mode::Eager}, StatedBy::Forms, JudgedBy::Oracle)                           \
  _(Branches, "branches", ModeSet{}, StatedBy::Always, JudgedBy::Pipeline)

enum class Clause : uint8_t {
#define OPC_CLAUSE_ENUM(name, id, modes, stated, judged) name,
  OPC_FORALL_CLAUSES(OPC_CLAUSE_ENUM)
#undef OPC_CLAUSE_ENUM
};

struct ClauseInfo {
  Clause clause;
  std::string_view id;
  ModeSet modes;  // empty: a static clause, judged once per check
  StatedBy stated_by;
  JudgedBy judged_by;
};

inline constexpr ClauseInfo kClauses[] = {
#define OPC_CLAUSE_ROW(name, id, modes, stated, judged) {Clause::name, id, modes, stated, judged},
    OPC_FORALL_CLAUSES(OPC_CLAUSE_ROW)
#undef OPC_CLAUSE_ROW
};

constexpr const ClauseInfo& clause_info(Clause c) { return kClauses[static_cast<size_t>(c)]; }
constexpr std::string_view to_string_view(Clause c) { return clause_info(c).id; }
std::string to_string(Clause c);
std::optional<Clause> clause_named(std::string_view id);
// "schema, alias, ...": every id, for error messages.
std::string clause_list();
inline std::ostream& operator<<(std::ostream& out, Clause c) { return out << to_string_view(c); }

}  // namespace opc
