// The oracles: pure functions from an observation to findings, one file per clause.
//
//   OracleInput in{contract, facts, obs};
//   for (Finding& f : check_alias(in)) ...
//
// An oracle never calls the op and never touches a device; it reads the observation
// (CPU bytes and metadata) and the contract. Each message says what broke, where, and
// what the consequence is, so a finding reads on its own.
#pragma once

#include <ATen/core/function_schema.h>

#include <optional>
#include <string>
#include <vector>

#include "generators/layout.h"
#include "runners/materialize.h"
#include "runners/observation.h"
#include "spec/annotations.h"
#include "spec/contract.h"

namespace opc {

struct Finding {
  Clause clause = Clause::Crash;
  std::string message;
  Mode mode = Mode::Eager;  // set by check/case_judge: the mode whose run the finding came from
};

struct OracleInput {
  const Contract& contract;
  const Annotations& registered;  // of the op under test
  const CaseFacts& facts;
  const Observation& obs;
};

// alias: a return shares a StorageImpl (PyTorch's rule) or overlapping bytes with an
// input or another return without a matching alias annotation; a return that is an input.
std::vector<Finding> check_alias(const OracleInput& in);
// mutation: a non-mutable argument's bytes (bitwise) or metadata changed; a mutable one
// was resized or re-pointed.
std::vector<Finding> check_mutation(const OracleInput& in);
// write: a declared output region kept the sentinel, or bytes of the view outside the
// declared region changed when the contract says `rest: untouched`.
std::vector<Finding> check_write(const OracleInput& in);
// extent: bytes of a tensor's storage outside its view (guards, gaps) changed.
std::vector<Finding> check_extent(const OracleInput& in);
// finite (contracts with `finite: true`, cases whose inputs are all finite): a return or a
// written element of a mutable argument is NaN or infinite.
std::vector<Finding> check_finite(const OracleInput& in);
struct FakeInput {
  const Contract& contract;
  const CaseFacts& facts;
  const Observation& eager;
  const Observation& fake;  // the same case on Meta tensors
};
// fake: the Meta kernel is missing, throws where eager does not, or its returns differ
// from eager's in sizes, dtype, significant strides, storage offset or aliasing; or
// eager's returns break the contract's `returns:` (shape, dtype), which a fake kernel
// written from the contract would predict.
std::vector<Finding> check_fake(const FakeInput& in);
struct FakeAloneInput {
  const Contract& contract;
  const CaseFacts& facts;
  const Observation& fake;
};
// fake, for an op that cannot run here (the contract skips eager), so nothing to compare
// with: the fake is missing or throws on a case that meets the contract, or its returns
// break the contract's `returns:`. (Its aliasing: check_alias on the fake's observation.)
std::vector<Finding> check_fake_alone(const FakeAloneInput& in);

struct CompiledObservation;
struct CompiledInput {
  const Contract& contract;
  const Annotations& registered;
  const Observation& eager;
  const CompiledObservation& compiled;
};
// compiled, opcontract's C++ model of torch.compile (Note [torch.compile and custom-op
// aliasing], runners/python/opcontract_bridge.py): the aliasing guard fires (PyTorch's
// message), a return reads dead inputs' memory, a mutable argument's clone changed its
// metadata, or the functionalized call's results differ from eager's, bitwise.
std::vector<Finding> check_compiled(const CompiledInput& in);

struct TorchCompileInput {
  const Contract& contract;
  const Annotations& registered;
  const std::string& backend;
  const Observation& eager;
  const Observation& compiled;  // run_torch_compile's
};
// compiled, real torch.compile: compiling or calling fails where eager runs (PyTorch's own
// message: functionalization refusal, custom-op aliasing error, guard or recompile
// trouble), or a return or mutable argument differs from eager's, bitwise.
std::vector<Finding> check_torch_compile(const TorchCompileInput& in);

struct DeterminismInput {
  const Contract& contract;
  const Annotations& registered;
  const Observation& first;
  const Observation& second;  // the same case again, on fresh identical tensors
};
// determinism: a return or mutable argument differs between two runs of one case.
std::vector<Finding> check_determinism(const DeterminismInput& in);

struct ReadsInput {
  const Contract& contract;
  const Annotations& registered;
  const Observation& first;     // the case as drawn (guards hold kGuardByte)
  const Observation& poisoned;  // the same case, its arguments' surroundings poisoned
  int arg;                      // the argument whose surroundings alone change the results, or -1
  Surroundings where;           // which of its surroundings (All when arg is -1)
};
// reads: a return or mutable argument changes when only memory outside the arguments'
// views changes (runners/materialize.h, poison_surroundings), the op being deterministic
// otherwise: it reads outside the views it was handed.
std::vector<Finding> check_reads(const ReadsInput& in);

struct PaddingInput {
  const Contract& contract;  // with `padding:`
  const Annotations& registered;
  const CaseFacts& facts;
  const Observation& nan_padded;     // padding rows of the listed tensors full of NaN
  const Observation& finite_padded;  // the same case, padding rows full of finite garbage
};
// padding: a return or mutable argument differs on its real rows between the two runs.
std::vector<Finding> check_padding(const PaddingInput& in);

struct PreconditionInput {
  const Contract& contract;
  const std::vector<int>& broken;  // indices into contract.requires_ the case breaks
  const Observation& obs;          // eager on that case
};
// precondition: the op did not raise on a case that breaks a `requires:`.
std::vector<Finding> check_precondition(const PreconditionInput& in);

struct ReferenceInput {
  const Contract& contract;  // with `reference:`
  const Annotations& registered;
  const Observation& eager;
  const Observation& reference;  // the reference op on the same case, fresh tensors
};
// reference: a return or mutable argument differs from the reference op's beyond the
// contract's tolerance for its dtype (NaN matches NaN), or the reference throws on a
// case the op accepts.
std::vector<Finding> check_reference(const ReferenceInput& in);

// donation (contracts with `donates:`), in three parts:
// the functional op (eager) wrote a donated input;
std::vector<Finding> check_functional_overload(const OracleInput& in);
// the donating overload's schema leaves a donated input unmarked (no case needed);
std::optional<Finding> check_donating_schema(const Contract& contract, const Annotations& donating);
struct DonationInput {
  const Contract& contract;       // with `donates:`
  const Annotations& donating;    // of the donating overload
  const Observation& functional;  // the op under test, eager
  const Observation& donated;     // the donating overload on the same case, fresh tensors
};
// the donating overload (compiled mode: what reinplacing swaps in) returned something
// else than the functional op, bitwise, or wrote an input that is not donated.
std::vector<Finding> check_donating_overload(const DonationInput& in);

struct CudagraphObservation;
// cudagraph: a capture or replay fails (host sync, allocation, ... with CUDA's text), a
// replay writes a read-only static input, or a replay's real rows differ from the op
// run eagerly on the GPU on those rows, bitwise. An op that cannot run eagerly on the
// GPU at all is a crash.
std::vector<Finding> check_cudagraph(const CudagraphObservation& obs);

struct InplaceInput {
  const Contract& contract;
  const Annotations& registered;
  const InplaceSpec& spec;      // the case's in-place use
  const Observation& separate;  // eager on separate tensors
  const Observation& in_place;  // the same case with spec.into handed spec.from's tensor
};
// An in-place use the contract supports (`aliasing.inplace`, supported: true) throws, or
// leaves other bytes in the shared tensor, another mutable argument or a return than the
// separate call (alias); one it calls unsupported is accepted without raising
// (precondition).
std::vector<Finding> check_inplace(const InplaceInput& in);

struct FormsInput {
  const Contract& contract;
  const Annotations& registered;
  const std::string& form;    // the argument in its other form, in words
  const Observation& shaped;  // eager with the arguments in their `shape`
  const Observation& formed;  // the same case with one argument viewed in another form
};
// forms: with an argument in another of the forms its contract lists (`forms:`), the op
// throws where it did not, or leaves other bytes in a return or a mutable argument.
std::vector<Finding> check_forms(const FormsInput& in);

struct MisuseInput {
  const Contract& contract;
  const Annotations& registered;
  const std::string& what;    // the misuse, in words (misuse_text)
  const CaseFacts& facts;     // of the case the op was handed (the misuse applied)
  const Observation& handed;  // the op on it, in fenced memory
  // The valid call on the same values, when the misuse keeps the shapes (layout, dtype):
  // its results are what the op should give. Null otherwise.
  const Observation* valid_call;
  bool loose;  // the values crossed a dtype: compare within 1e-2
};
// misuse: the op neither refused a caller's mistake nor ran safely: it wrote outside what
// it was handed or into an argument it may not write, or (layout, dtype) gave other
// results than the valid call on the same values.
std::vector<Finding> check_misuse(const MisuseInput& in);

// schema: the registered schema differs from the contract's, alias annotations included.
std::optional<Finding> check_schema(const Contract& contract, const c10::FunctionSchema& registered);

}  // namespace opc
