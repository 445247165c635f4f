#include "runners/materialize.h"

#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <c10/util/Float8_e4m3fn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>

namespace opc {
namespace {

// splitmix64: fast, good enough for test data, and identical on every machine.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform01() { return (next() >> 11) * 0x1.0p-53; }
};

// Irwin-Hall with four 16-bit terms of one draw: mean 0, unit variance, cheap (filling
// dominates a case's cost; inlined into the fill loops, where a call per element showed
// as a quarter of materialising).
[[gnu::always_inline]] inline double normal(Rng& rng) {
  const uint64_t r = rng.next();
  const uint32_t sum = (r & 0xFFFF) + ((r >> 16) & 0xFFFF) + ((r >> 32) & 0xFFFF) + (r >> 48);
  return (sum * (1.0 / 65536.0) - 2.0) * 1.7320508075688772;
}

// A drawn value as an element of type T; `normal` draws become small ints around 0 in
// integer types.
template <class T>
T element(double v, bool normal) {
  if constexpr (std::is_integral_v<T>) {
    if (normal) v *= 8;
    if constexpr (std::is_same_v<T, bool>) return v > 0;
    else if constexpr (std::is_unsigned_v<T>) return static_cast<T>(static_cast<int64_t>(std::abs(v)));
    else return static_cast<T>(static_cast<int64_t>(v));
  } else {
    return static_cast<T>(static_cast<float>(v));
  }
}

// One loop per distribution, so that the choice is made once per tensor, not per element.
template <class T>
void fill_with(T* p, int64_t n, Rng& rng, const ValueDist& dist, int64_t lo, int64_t hi) {
  switch (dist.kind) {
    case ValueDist::Kind::Normal:
      for (int64_t i = 0; i < n; ++i) p[i] = element<T>(normal(rng), true);
      break;
    case ValueDist::Kind::Uniform:
      for (int64_t i = 0; i < n; ++i) p[i] = element<T>(lo + (hi - lo) * rng.uniform01(), false);
      break;
    case ValueDist::Kind::Ints:
      for (int64_t i = 0; i < n; ++i)
        p[i] = element<T>(
            static_cast<double>(lo + static_cast<int64_t>(rng.next() % static_cast<uint64_t>(hi - lo + 1))), false);
      break;
    case ValueDist::Kind::Offsets:  // the view's elements are written afterwards
      for (int64_t i = 0; i < n; ++i) p[i] = element<T>(0, false);
      break;
  }
}

void fill_values(at::Tensor& flat, int64_t first, int64_t n, Rng& rng, const ValueDist& dist, const EvalInput& in) {
  const int64_t lo = dist.kind == ValueDist::Kind::Normal ? 0 : dist.lo.eval(in);
  const int64_t hi = dist.kind == ValueDist::Kind::Normal ? 0 : dist.hi.eval(in);
  if (dist.kind == ValueDist::Kind::Ints && hi < lo)
    throw EvalError("values: ints range [" + std::to_string(lo) + ", " + std::to_string(hi) + "] is empty");
  switch (flat.scalar_type()) {
#define OPC_FILL(type, name)  \
  case c10::ScalarType::name: \
    return fill_with(flat.data_ptr<type>() + first, n, rng, dist, lo, hi);
    OPC_FILL(float, Float)
    OPC_FILL(double, Double)
    OPC_FILL(c10::Half, Half)
    OPC_FILL(c10::BFloat16, BFloat16)
    OPC_FILL(c10::Float8_e4m3fn, Float8_e4m3fn)
    OPC_FILL(int64_t, Long)
    OPC_FILL(int32_t, Int)
    OPC_FILL(int16_t, Short)
    OPC_FILL(int8_t, Char)
    OPC_FILL(uint8_t, Byte)
    OPC_FILL(bool, Bool)
#undef OPC_FILL
    default:
      TORCH_CHECK(false, "no value fill for dtype ", flat.scalar_type());
  }
}

// Cumulative offsets 0 = o[0] <= o[1] <= ... <= o[m-1] = total, in one of the shapes that
// break kernels: cut points anywhere (duplicates make empty requests), an empty request on
// purpose, every token in one request, one token per request.
std::vector<int64_t> offsets(int64_t m, int64_t total, Rng& rng) {
  std::vector<int64_t> o(m, 0);
  if (m <= 1) return o;
  const uint64_t shape = rng.next() % 4;
  if (shape == 2) {  // one request (a random one) holds every token
    const int64_t owner = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(m - 1));
    for (int64_t i = owner + 1; i < m; ++i) o[i] = total;
    return o;
  }
  if (shape == 3) {  // a token per request, the last one takes the rest
    for (int64_t i = 1; i < m - 1; ++i) o[i] = std::min(i, total);
  } else {
    for (int64_t i = 1; i < m - 1; ++i) o[i] = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(total + 1));
    std::sort(o.begin() + 1, o.end() - 1);
    if (shape == 1 && m > 2) {  // an empty request: two equal adjacent offsets
      const int64_t at = 1 + static_cast<int64_t>(rng.next() % static_cast<uint64_t>(m - 2));
      o[at] = o[at - 1];
    }
  }
  o[m - 1] = total;
  return o;
}

void fill_offsets(const at::Tensor& view, Rng& rng, int64_t total) {
  if (total < 0) throw EvalError("values: offsets end at " + std::to_string(total) + ", below 0");
  const std::vector<int64_t> o = offsets(view.numel(), total, rng);
  view.copy_(at::tensor(o, at::kLong));
}

void fill_sentinel(const at::Tensor& region) {
  if (region.numel() == 0) return;
  const std::vector<uint8_t> bytes = sentinel_bytes(region.scalar_type());
  at::Tensor one = at::empty({1}, region.options());
  std::memcpy(one.data_ptr(), bytes.data(), bytes.size());
  region.copy_(one.expand(region.sizes()));
}

// A flat storage of at least `elems` elements whose end is followed by a PROT_NONE page; its
// start 64-byte aligned as the CPU allocator's, the few elements that alignment adds at the
// end included. Unmapped when the last tensor using it goes.
at::Tensor fenced_storage(int64_t elems, c10::ScalarType dtype) {
  const int64_t item = static_cast<int64_t>(c10::elementSize(dtype));
  const int64_t page = sysconf(_SC_PAGESIZE);
  const int64_t bytes = elems * item;
  const int64_t region = (bytes + kStorageAlignment + page - 1) / page * page + page;
  void* base = mmap(nullptr, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  TORCH_CHECK(base != MAP_FAILED, "fenced storage: mmap of ", region, " bytes failed");
  auto* fence = static_cast<uint8_t*>(base) + region - page;
  TORCH_CHECK(mprotect(fence, page, PROT_NONE) == 0, "fenced storage: mprotect failed");
  const auto start = reinterpret_cast<uintptr_t>(fence - bytes) / kStorageAlignment * kStorageAlignment;
  const int64_t total = (reinterpret_cast<uintptr_t>(fence) - start) / item;
  return at::from_blob(
      reinterpret_cast<void*>(start), {total}, [base, region](void*) { munmap(base, region); },
      at::TensorOptions().dtype(dtype));
}

at::Tensor new_storage(int64_t elems, c10::ScalarType dtype, Placement placement) {
  if (placement == Placement::Fenced) return fenced_storage(elems, dtype);
  return at::empty({elems}, at::TensorOptions().dtype(dtype));
}

// The element of `view` at row-major position `flat` (0 <= flat < numel), as a 0-d view.
at::Tensor element_at(const at::Tensor& view, int64_t flat) {
  at::Tensor e = view;
  int64_t inner = view.numel();
  for (int64_t d = 0; d < view.dim(); ++d) {
    inner /= view.size(d);
    e = e.select(0, flat / inner);
    flat %= inner;
  }
  return e;
}

// The first element of `view` set to `value` (an Index misuse).
void poke_first(const at::Tensor& view, int64_t value) { element_at(view, 0).fill_(value); }

// The dtype's smallest subnormal, three times over (still subnormal).
double subnormal(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Double:
      return 3 * std::numeric_limits<double>::denorm_min();
    case c10::ScalarType::Half:
      return 3 * 5.9604644775390625e-08;  // 2^-24
    case c10::ScalarType::BFloat16:
      return 3 * 9.183549615799121e-41;  // 2^-133
    default:
      return 3 * static_cast<double>(std::numeric_limits<float>::denorm_min());
  }
}

// Near the dtype's largest finite magnitude.
double huge(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Double:
      return 0.9 * std::numeric_limits<double>::max();
    case c10::ScalarType::Half:
      return 60000;
    default:
      return 0.9 * static_cast<double>(std::numeric_limits<float>::max());  // float32, bfloat16
  }
}

// Each row's first or last element (rows along dim 0), as one view of `view` of size
// [rows]: a few tensor ops per case, not a few per row (a 512-row case spent milliseconds
// in the dispatcher). `view` has two dims or more.
at::Tensor row_ends(const at::Tensor& view, bool last) {
  at::Tensor e = view;
  for (int64_t d = view.dim() - 1; d >= 1; --d) e = e.select(d, last ? view.size(d) - 1 : 0);
  return e;
}

// Every row (dim 0) filled with its first element; a 0-d or 1-d view is one row.
void constant_rows(const at::Tensor& view) {
  if (view.dim() <= 1) {
    view.fill_(element_at(view, 0).item());
    return;
  }
  std::vector<int64_t> column(view.dim(), 1);
  column[0] = view.size(0);
  view.copy_(row_ends(view, false).clone().view(column).expand(view.sizes()));
}

// Every row's last element set to the row's largest (a tie for the maximum).
void tied_max(const at::Tensor& view) {
  if (view.dim() <= 1) {
    element_at(view, view.numel() - 1).fill_(view.max().item());
    return;
  }
  std::vector<int64_t> inner(view.dim() - 1);
  std::iota(inner.begin(), inner.end(), 1);
  row_ends(view, true).copy_(at::amax(view, inner));
}

// The case's edge values (generators/edge_values.h) laid over the drawn ones. Not on a view
// whose elements share memory (expanded): one write would land on several.
void apply_form(const at::Tensor& view, ValueForm form, const ValueDist& dist, const EvalInput& in) {
  if (form == ValueForm::Drawn || view.numel() == 0 || at::has_internal_overlap(view) == at::MemOverlap::Yes) return;
  const bool floating = at::isFloatingType(view.scalar_type());
  const bool integral = at::isIntegralType(view.scalar_type(), /*includeBool=*/false);
  switch (form) {
    case ValueForm::Drawn:
      break;
    case ValueForm::ZeroRows:
      if (!floating) return;
      if (view.dim() <= 1) view.zero_();
      else view.slice(0, 0, view.size(0), 2).zero_();  // rows 0, 2, 4, ...
      break;
    case ValueForm::ConstantRows:
      if (floating) constant_rows(view);
      break;
    case ValueForm::Huge:
      if (floating) element_at(view, view.numel() / 2).fill_(huge(view.scalar_type()));
      break;
    case ValueForm::TiedMax:
      if (floating) tied_max(view);
      break;
    case ValueForm::Denormals:
      if (floating)
        view.masked_fill_(at::arange(view.numel()).reshape(view.sizes()).remainder(2).eq(0),
                          subnormal(view.scalar_type()));
      break;
    case ValueForm::NonFinite:
      if (!floating) return;
      element_at(view, 0).fill_(std::numeric_limits<double>::quiet_NaN());
      element_at(view, view.numel() - 1).fill_(std::numeric_limits<double>::infinity());
      if (view.numel() >= 3) element_at(view, view.numel() / 2).fill_(-std::numeric_limits<double>::infinity());
      break;
    case ValueForm::Low:
    case ValueForm::High:
      if (integral && dist.kind == ValueDist::Kind::Ints)
        view.fill_(form == ValueForm::Low ? dist.lo.eval(in) : dist.hi.eval(in));
      break;
    case ValueForm::Repeated:
      if (integral) view.fill_(element_at(view, 0).item());
      break;
  }
}

}  // namespace

std::vector<uint8_t> sentinel_bytes(c10::ScalarType dtype) {
  auto le = [](uint64_t bits, size_t n) {
    std::vector<uint8_t> b(n);
    for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(bits >> (8 * i));
    return b;
  };
  switch (dtype) {
    case c10::ScalarType::Float:
      return le(0x7FA5A5A5u, 4);
    case c10::ScalarType::Double:
      return le(0x7FF5A5A5A5A5A5A5ull, 8);
    case c10::ScalarType::Half:
      return le(0x7DA5u, 2);
    case c10::ScalarType::BFloat16:
      return le(0x7FA5u, 2);
    case c10::ScalarType::Float8_e4m3fn:
      return {0x7F};
    default:
      return std::vector<uint8_t>(c10::elementSize(dtype), 0xA5);
  }
}

at::Tensor real_rows(const at::Tensor& t, int64_t dim, int64_t real) {
  if (dim >= t.dim()) return t;
  return t.narrow(dim, 0, std::clamp<int64_t>(real, 0, t.size(dim)));
}

void fill_garbage_rows(const at::Tensor& view, int64_t dim, int64_t real, int variant, bool integers) {
  if (dim >= view.dim()) return;
  const int64_t size = view.size(dim);
  const int64_t start = std::clamp<int64_t>(real, 0, size);
  at::Tensor rows = view.narrow(dim, start, size - start);
  if (rows.numel() == 0) return;
  if (at::isFloatingType(rows.scalar_type()))
    // Large but finite in every float dtype (fp8 e4m3's largest is 448).
    rows.fill_(variant == 0 ? std::numeric_limits<double>::quiet_NaN() : rows.element_size() == 1 ? 400.0 : 3.0e4);
  else if (!integers) return;
  else if (rows.scalar_type() == c10::ScalarType::Bool) rows.fill_(variant == 0);
  else rows.fill_(variant == 0 ? 127 : -128);  // within every integer dtype's range
}

void fill_padding(const Materialized& m, const Contract& contract, const EvalInput& in, int variant) {
  const PaddingSpec& p = *contract.padding;
  const int64_t real = p.real.eval(in);
  for (const TensorArg& t : m.tensors)
    if (std::find(p.args.begin(), p.args.end(), t.arg) != p.args.end())
      fill_garbage_rows(t.view, p.dim, real, variant, true);
}

at::Tensor region_of(const at::Tensor& view, const Region& region, const EvalInput& in) {
  at::Tensor r = view;
  if (region.all) return r;
  for (size_t d = 0; d < region.dims.size() && d < static_cast<size_t>(view.dim()); ++d) {
    const int64_t size = view.size(d);
    auto bound = [&](const std::optional<Expr>& e, int64_t dflt) {
      int64_t v = e ? e->eval(in) : dflt;
      if (v < 0) v += size;  // Python's negative indices
      return std::clamp<int64_t>(v, 0, size);
    };
    const int64_t start = bound(region.dims[d].start, 0);
    const int64_t stop = std::max(start, bound(region.dims[d].stop, size));
    r = r.slice(static_cast<int64_t>(d), start, stop);
  }
  return r;
}

c10::IValue scalar_arg(const Case& c, const Contract& contract, const ArgSpec& a) {
  if (!a.from_state.empty()) return {};  // set_context puts the python_state hook's object here
  return std::visit(
      [&](const auto& v) -> c10::IValue {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::monostate>)
          return *contract.schema->arguments()[a.index].default_value();
        else return v;
      },
      std::get<ScalarValue>(c.args[a.index]));
}

Materialized materialize(const Case& c, const Contract& contract, const CaseFacts& facts, Placement placement) {
  Materialized m;
  m.args.reserve(contract.args.size());
  const EvalInput in = facts.input();
  std::vector<at::Tensor> buffers(contract.buffers.size());  // made by their first view
  for (const auto& a : contract.args) {
    if (!a.is_tensor) {
      m.args.push_back(scalar_arg(c, contract, a));
      continue;
    }
    const TensorCase& t = std::get<TensorCase>(c.args[a.index]);
    if (t.none) {
      m.args.emplace_back();
      continue;
    }
    const Geometry& g = facts.geometry(a.index);
    Rng rng{c.data_seed ^ (0xD1B54A32D192ED03ull * static_cast<uint64_t>(a.index + 1))};
    at::Tensor* shared = t.layout == Layout::View ? &buffers[t.carved.buffer] : nullptr;
    at::Tensor storage = shared && shared->defined() ? *shared : at::Tensor();
    at::Tensor view;
    if (storage.defined()) {
      // A later view of a buffer: its own values drawn into its elements.
      view = storage.as_strided(g.sizes, g.strides, kGuardElems + g.offset);
      at::Tensor drawn = at::empty({view.numel()}, storage.options());
      fill_values(drawn, 0, view.numel(), rng, a.values, in);
      view.copy_(drawn.view(g.sizes));
    } else {
      const int64_t trailing = placement == Placement::Fenced ? 0 : kGuardElems;
      storage = new_storage(kGuardElems + g.storage_elems + trailing, t.dtype, placement);
      const size_t item = storage.element_size();
      auto* bytes = static_cast<uint8_t*>(storage.data_ptr());
      std::memset(bytes, kGuardByte, kGuardElems * item);
      std::memset(bytes + (kGuardElems + g.storage_elems) * item, kGuardByte,
                  (storage.numel() - kGuardElems - g.storage_elems) * item);
      fill_values(storage, kGuardElems, g.storage_elems, rng, a.values, in);
      view = storage.as_strided(g.sizes, g.strides, kGuardElems + g.offset);
      if (shared) *shared = storage;
    }
    if (a.values.kind == ValueDist::Kind::Offsets) fill_offsets(view, rng, a.values.hi.eval(in));
    apply_form(view, t.form, a.values, in);
    if (c.misuse.kind == MisuseKind::Index && c.misuse.arg == a.index) poke_first(view, c.misuse.value);
    if (const MutateSpec* ms = contract.mutate_spec(a.index); ms && ms->sentinel)
      fill_sentinel(region_of(view, ms->writes, in));
    m.args.emplace_back(view);
    m.tensors.push_back({a.index, storage, view});
  }
  return m;
}

Materialized copy_of(const Materialized& m) {
  Materialized out;
  out.args = m.args;
  out.tensors.reserve(m.tensors.size());
  std::vector<std::pair<const void*, at::Tensor>> copied;  // views of one buffer stay on one storage
  for (const TensorArg& t : m.tensors) {
    const auto seen =
        std::find_if(copied.begin(), copied.end(), [&](const auto& p) { return p.first == t.storage.data_ptr(); });
    at::Tensor storage = seen != copied.end() ? seen->second : at::Tensor();
    if (!storage.defined()) {
      // Allocated and copied directly: a case's small tensors would spend more time in the
      // dispatcher (clone, empty) than in the copy.
      storage = at::detail::empty_cpu({t.storage.numel()}, t.storage.scalar_type(), false);
      std::memcpy(storage.data_ptr(), t.storage.data_ptr(), t.storage.nbytes());
      copied.emplace_back(t.storage.data_ptr(), storage);
    }
    at::Tensor view = storage.as_strided(t.view.sizes(), t.view.strides(), t.view.storage_offset());
    out.args[t.arg] = view;
    out.tensors.push_back({t.arg, storage, view});
  }
  return out;
}

namespace {

// The elements of a storage some argument's view covers (views of one buffer share it).
at::Tensor covered_by_views(const Materialized& m, const TensorArg& of) {
  at::Tensor covered = at::zeros({of.storage.numel()}, at::kBool);
  for (const TensorArg& t : m.tensors)
    if (t.storage.data_ptr() == of.storage.data_ptr() && t.view.numel() > 0)
      covered.as_strided(t.view.sizes(), t.view.strides(), t.view.storage_offset()).fill_(true);
  return covered;
}

// The span from a view's first element to its last, as a mask over its storage.
at::Tensor span_of(const TensorArg& t) {
  at::Tensor own = at::zeros({t.storage.numel()}, at::kBool);
  own.as_strided(t.view.sizes(), t.view.strides(), t.view.storage_offset()).fill_(true);
  const at::Tensor at = own.nonzero();
  const at::Tensor idx = at::arange(t.storage.numel());
  return idx.ge(at.min()).logical_and(idx.le(at.max()));
}

std::optional<at::ScalarType> same_size_integer(int64_t bytes) {
  switch (bytes) {
    case 1:
      return at::kByte;
    case 2:
      return at::kShort;
    case 4:
      return at::kInt;
    case 8:
      return at::kLong;
    default:
      return std::nullopt;
  }
}

// One element of poison: NaN for floating dtypes, 0x5A bytes for the others.
at::Tensor poison_of(at::ScalarType dtype) {
  at::Tensor one = at::empty({1}, at::TensorOptions().dtype(dtype));
  if (at::isFloatingType(dtype) || at::isComplexType(dtype))
    one.copy_(at::full({1}, std::numeric_limits<float>::quiet_NaN(), at::kFloat));
  else one.view(at::kByte).fill_(0x5A);
  return one;
}

// Whether t's view is dense (contiguous) and no other argument views its storage: then its
// surroundings are just the elements before and after it, and need no mask.
bool dense_and_alone(const Materialized& m, const TensorArg& t) {
  if (!t.view.is_contiguous()) return false;
  return std::count_if(m.tensors.begin(), m.tensors.end(),
                       [&](const TensorArg& o) { return o.storage.data_ptr() == t.storage.data_ptr(); }) == 1;
}

// Poison before and after a dense view alone in its storage: two fills, where the masks cost
// more than most ops' calls. It has no gaps.
void poison_around(const TensorArg& t, Surroundings which) {
  const std::optional<at::ScalarType> bits = same_size_integer(t.storage.element_size());
  if (which == Surroundings::Gaps || !bits) return;
  const at::Tensor flat = t.storage.view(*bits);
  const at::Tensor value = poison_of(t.storage.scalar_type()).view(*bits)[0];
  const int64_t begin = t.view.storage_offset(), end = begin + t.view.numel();
  flat.narrow(0, 0, begin).fill_(value);
  flat.narrow(0, end, flat.numel() - end).fill_(value);
}

}  // namespace

void poison_surroundings(const Materialized& m, Surroundings which, int arg) {
  std::vector<const void*> done;
  for (const TensorArg& t : m.tensors) {
    if ((arg >= 0 && t.arg != arg) || t.view.numel() == 0) continue;
    if (dense_and_alone(m, t)) {
      poison_around(t, which);
      continue;
    }
    const bool one_dtype = std::all_of(m.tensors.begin(), m.tensors.end(), [&](const TensorArg& o) {
      return o.storage.data_ptr() != t.storage.data_ptr() || o.storage.scalar_type() == t.storage.scalar_type();
    });
    if (!one_dtype) continue;  // a buffer seen as two dtypes: its elements are not one grid
    // Each storage once for All (its views' union); per view for Gaps and PastEnds.
    if (which == Surroundings::All) {
      if (std::find(done.begin(), done.end(), t.storage.data_ptr()) != done.end()) continue;
      done.push_back(t.storage.data_ptr());
    }
    at::Tensor poison = covered_by_views(m, t).logical_not();
    if (which != Surroundings::All) {
      const at::Tensor span = span_of(t);
      poison.logical_and_(which == Surroundings::Gaps ? span : span.logical_not());
    }
    // Written as the elements' bits, so every dtype takes it (fp8 has no masked_fill).
    const std::optional<at::ScalarType> bits = same_size_integer(t.storage.element_size());
    if (!bits) continue;
    t.storage.view(*bits).masked_fill_(poison, poison_of(t.storage.scalar_type()).view(*bits)[0]);
  }
}

}  // namespace opc
