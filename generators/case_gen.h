// The generator of cases for a contract, built from RapidCheck combinators so that
// every case shrinks: smaller dims, earlier-listed dtypes and layouts, less slack.
//
//   rc::Gen<Case> gen = case_gen(contract);
//   rc::Shrinkable<Case> s = gen(rc::Random(seed), size);   // s.value(), s.shrinks()
//
// Every generated case satisfies the contract's `constraints:` and `requires:`, stays within
// its `budget:`, and has no negative size. Evaluating a dim's bounds or a shape can fail (division by zero,
// overflow in a contract): that escapes as a ContractError at the dim or argument, a
// fault of the contract, not of the op; so does a case over kMaxCaseElements. Other
// expressions (constraints, requires) escape as EvalError.
#pragma once

#include <rapidcheck/Gen.h>

#include <memory>

#include "spec/contract.h"
#include "generators/case.h"

namespace opc {

class CaseFacts;

// The most elements of storage (layout slack included, a size of 0 counted as 1) one
// case's tensors may take together: 2^28, 1 GiB of float32. A contract whose dims allow
// more is refused when such a case is drawn, before anything is allocated.
inline constexpr int64_t kMaxCaseElements = int64_t{1} << 28;

rc::Gen<Case> case_gen(std::shared_ptr<const Contract> contract);

// Cases that meet the constraints but break at least one `requires:`, for the
// precondition clause: the op must refuse each. Shrinks within that set. Fails to
// generate (rc::GenerationFailure) when the dims and layouts cannot break any requires.
rc::Gen<Case> violating_case_gen(std::shared_ptr<const Contract> contract);

// Whether a case meets the constraints, the requires and has valid shapes (not the
// budget: a real call or a case file outside it is still a valid case).
bool case_is_valid(const Case& c, const Contract& contract);

// The `requires:` a case with valid shapes and constraints breaks (indices), in order.
std::vector<int> broken_requires(const CaseFacts& facts, const Contract& contract);

// Why a case made elsewhere (read from a case file) cannot run under this contract, or ""
// when it can: every shape must be what the dims give, dtypes copied where the contract
// copies them, layouts ones the rank allows, the constraints must hold and the size cap
// too. A broken requires is allowed: the precondition clause's cases break one.
std::string case_misfit(const Case& c, const Contract& contract);

// The same case with one value (a dim) changed and every shape re-evaluated: the case
// at another batch size, for the cudagraph mode's capture sizes. Other values, dtypes,
// layouts and the data seed stay; check case_is_valid before use.
Case with_value(const Case& c, const Contract& contract, int slot, int64_t value);

}  // namespace opc
