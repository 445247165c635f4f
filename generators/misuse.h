// Misuse variants: a caller's mistakes, derived from a valid case and the contract with
// no keys of their own. Each breaks exactly one relation the contract states, for one
// argument, and leaves everything else as the valid case has it:
//
//   size     one dim one smaller, zero, one larger or doubled (an `out` a row short, a
//            `scale` with fewer entries than tokens)
//   rank     a leading dim of 1 more, or the first two dims merged
//   dtype    another dtype the kernel could plausibly be handed (floats for floats and
//            the other way round, the other integer width, ...)
//   layout   each layout the contract does not list for it (a row slice of a wider
//            buffer, transposed, at an offset, ...): listing only `contiguous` says what
//            callers usually pass, not what the kernel can take
//   index    one element of a `values: {ints: [lo, hi]}` tensor below lo, above hi, or huge
//   scalar   an int scalar one off, doubled or zero, away from what the dims give it
//            (`head_size: hs`) or outside its `choose:` values; a str scalar a name
//            none of its values is (kUnlistedString)
//
// A size or dtype mistake on a tensor whose dim or dtype the contract ties to another's
// (`hidden` in both shapes, `dtype: query`) unties them; the words say so.
//
// A kernel handed one must refuse it with a clean error, or run inside the memory it was
// handed with the results a valid call gives (oracles/misuse.cc judges that).
//
//   std::vector<Misuse> all = misuse_variants(valid_case, contract);
//   Case misused = valid_case;  misused.misuse = all[k];
//   std::optional<Case> handed = apply_misuse(misused, contract);  // what the op gets
//   misuse_text(misused, contract)   // "out: size of dim 0 one smaller (3 -> 2)"
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "generators/case.h"
#include "spec/contract.h"

namespace opc {

// How a Size misuse changes the dim (Misuse::value).
enum class SizeChange : int64_t { MinusOne, ToZero, PlusOne, Double };
// "minus_one", "to_zero", "plus_one", "double" (case files).
const char* size_change_name(SizeChange change);
std::optional<SizeChange> parse_size_change(const std::string& name);

// What a str scalar is handed by a scalar misuse: a name no op takes.
inline constexpr char kUnlistedString[] = "opcontract_unlisted";

// Every misuse the case allows, in a fixed order (by argument, then kind).
std::vector<Misuse> misuse_variants(const Case& c, const Contract& contract);

// The case the op is handed: the plain valid call (below) with the misuse applied to the
// argument's TensorCase (an Index misuse keeps the TensorCase: materialize() writes the
// value). nullopt when the misuse does not apply to this case (a shrunk case whose dim is
// already 0, say). A case without misuse: itself.
std::optional<Case> apply_misuse(const Case& c, const Contract& contract);

// The case as a valid call: its misuse dropped.
Case without_misuse(const Case& c);

// The valid call a misuse is made of and held against: its misuse dropped, separate tensors,
// and every tensor in the first layout its contract lists (what callers usually pass, and
// the layout a kernel is likeliest right on), so that only the one mistake differs.
Case plain_valid_call(const Case& c, const Contract& contract);

// The plain valid call in the fenced memory its mistake ran in: when the mistake faulted,
// whether the valid call faults there too (an over-read on valid input) or not (the fault
// is the mistake's).
Case fenced_valid_call(const Case& c, const Contract& contract);

// The misuse in words, e.g. "out: size of dim 0 one smaller (3 -> 2)"; "" for none.
std::string misuse_text(const Case& c, const Contract& contract);

// Why a misuse read from a case file cannot apply to this case and contract, or "".
std::string misuse_misfit(const Case& c, const Contract& contract);

}  // namespace opc
