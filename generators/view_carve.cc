#include "generators/view_carve.h"

#include <algorithm>
#include <numeric>

namespace opc {
namespace {

struct Strided {
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
};

std::string list_text(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

class Carver {
 public:
  Carver(const ArgSpec& a, const Contract& c, const std::vector<int64_t>& values)
      : arg_(a), contract_(c), values_(values) {}

  Carved run(std::vector<int64_t>& sizes) {
    const BufferSpec& b = contract_.buffers[arg_.view->buffer];
    Strided t;
    Carved out;
    out.buffer = arg_.view->buffer;
    out.base_elems = 1;
    for (const Expr& e : b.shape) {
      const int64_t d = eval(e, b.loc, "buffers." + b.name + ".shape");
      if (d < 0) fail(b.loc, "buffers." + b.name + ": a size of " + std::to_string(d));
      if (__builtin_mul_overflow(out.base_elems, d, &out.base_elems))
        fail(b.loc, "buffers." + b.name + ": too many elements to lay out");
      t.sizes.push_back(d);
    }
    t.strides = dense(t.sizes);
    for (const ViewStep& step : arg_.view->steps) apply(step, t);
    sizes = t.sizes;
    out.strides = t.strides;
    out.offset = t.offset;
    return out;
  }

 private:
  [[noreturn]] void fail(const SourceLoc& at, const std::string& why) const {
    throw ContractError(at, "args." + arg_.name + ".view: " + why);
  }
  int64_t eval(const Expr& e, const SourceLoc& at, const std::string& what) const {
    try {
      return e.eval({values_.data(), nullptr});
    } catch (const EvalError& err) {
      throw ContractError(at, what + ": " + err.what());
    }
  }
  static std::vector<int64_t> dense(const std::vector<int64_t>& sizes) {
    std::vector<int64_t> strides(sizes.size());
    int64_t s = 1;
    for (size_t i = sizes.size(); i-- > 0;) {
      strides[i] = s;
      s *= std::max<int64_t>(sizes[i], 1);
    }
    return strides;
  }

  void apply(const ViewStep& step, Strided& t) const {
    std::vector<int64_t> v;
    for (const Expr& e : step.operands) v.push_back(eval(e, step.loc, "args." + arg_.name + ".view"));
    const std::string call = std::string(to_string(step.kind)) + "(" + list_text(v) + ") of a tensor of sizes [" +
                             list_text(t.sizes) + "]";
    auto dim = [&](int64_t d) {
      const int64_t rank = static_cast<int64_t>(t.sizes.size());
      if (d < -rank || d >= rank) fail(step.loc, call + ": dim " + std::to_string(d) + " out of range");
      return static_cast<size_t>(d < 0 ? d + rank : d);
    };
    auto narrow = [&](size_t d, int64_t start, int64_t length) {
      if (start < 0 || length < 0 || start + length > t.sizes[d])
        fail(step.loc, call + ": the slice runs outside dim " + std::to_string(d));
      t.offset += start * t.strides[d];
      t.sizes[d] = length;
    };
    switch (step.kind) {
      case ViewStep::Kind::Select: {
        const size_t d = dim(v[0]);
        const int64_t index = v[1] < 0 ? v[1] + t.sizes[d] : v[1];
        if (index < 0 || index >= t.sizes[d]) fail(step.loc, call + ": index out of range");
        t.offset += index * t.strides[d];
        t.sizes.erase(t.sizes.begin() + d);
        t.strides.erase(t.strides.begin() + d);
        break;
      }
      case ViewStep::Kind::Narrow: {
        const size_t d = dim(v[0]);
        narrow(d, v[1] < 0 ? v[1] + t.sizes[d] : v[1], v[2]);
        break;
      }
      case ViewStep::Kind::Chunk: {
        // PyTorch: chunks of ceil(size / chunks), the last one shorter, fewer when they run out.
        const size_t d = dim(v[1]);
        if (v[0] <= 0) fail(step.loc, call + ": chunks must be positive");
        const int64_t each = std::max<int64_t>((t.sizes[d] + v[0] - 1) / v[0], 1);
        const int64_t made = t.sizes[d] == 0 ? 1 : (t.sizes[d] + each - 1) / each;
        if (v[2] < 0 || v[2] >= made)
          fail(step.loc, call + ": chunk " + std::to_string(v[2]) + " of the " + std::to_string(made) + " made");
        narrow(d, v[2] * each, std::min(each, t.sizes[d] - v[2] * each));
        break;
      }
      case ViewStep::Kind::View: {
        const int64_t numel = std::accumulate(t.sizes.begin(), t.sizes.end(), int64_t{1}, std::multiplies<>());
        std::vector<int64_t> want = v;
        const auto infer = std::find(want.begin(), want.end(), -1);
        if (infer != want.end()) {
          const int64_t known = -std::accumulate(want.begin(), want.end(), int64_t{1}, std::multiplies<>());
          if (known <= 0 || numel % known) fail(step.loc, call + ": -1 cannot be inferred");
          *infer = numel / known;
        }
        if (std::any_of(want.begin(), want.end(), [](int64_t s) { return s < 0; }) ||
            std::accumulate(want.begin(), want.end(), int64_t{1}, std::multiplies<>()) != numel)
          fail(step.loc, call + ": the sizes hold another number of elements");
        const auto strides = view_strides(t.sizes, t.strides, want);
        if (!strides) fail(step.loc, call + ": its strides allow no such view (PyTorch would need a copy)");
        t.sizes = want;
        t.strides = *strides;
        break;
      }
      case ViewStep::Kind::Transpose: {
        const size_t a = dim(v[0]), b = dim(v[1]);
        std::swap(t.sizes[a], t.sizes[b]);
        std::swap(t.strides[a], t.strides[b]);
        break;
      }
    }
  }

  const ArgSpec& arg_;
  const Contract& contract_;
  const std::vector<int64_t>& values_;
};

}  // namespace

std::optional<std::vector<int64_t>> view_strides(const std::vector<int64_t>& sizes,
                                                 const std::vector<int64_t>& strides,
                                                 const std::vector<int64_t>& new_sizes) {
  std::vector<int64_t> out(new_sizes.size());
  const int64_t numel = std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<>());
  if (sizes.empty() || numel == 0) {  // any dense strides will do
    int64_t s = 1;
    for (size_t i = new_sizes.size(); i-- > 0;) {
      out[i] = s;
      s *= std::max<int64_t>(new_sizes[i], 1);
    }
    return out;
  }
  // Walk the old dims from the last, in runs that are contiguous among themselves; each
  // run must be split into (or merged from) whole new dims.
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t run_stride = strides.back(), run_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    run_numel *= sizes[d];
    const bool run_ends = d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != run_numel * run_stride);
    if (!run_ends) continue;
    while (view_d >= 0 && (view_numel < run_numel || new_sizes[view_d] == 1)) {
      out[view_d] = view_numel * run_stride;
      view_numel *= new_sizes[view_d];
      --view_d;
    }
    if (view_numel != run_numel) return std::nullopt;
    if (d > 0) {
      run_stride = strides[d - 1];
      run_numel = view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

Carved carve(const ArgSpec& a, const Contract& contract, const std::vector<int64_t>& values,
             std::vector<int64_t>& sizes) {
  return Carver(a, contract, values).run(sizes);
}

void carve_views(Case& c, const Contract& contract) {
  for (const ArgSpec& a : contract.args) {
    auto* t = std::get_if<TensorCase>(&c.args[a.index]);
    if (!t || t->none || t->layout != Layout::View || !a.view) continue;
    std::vector<int64_t> sizes;
    t->carved = carve(a, contract, c.values, sizes);
    if (sizes != t->sizes)
      throw ContractError(a.view->loc, "args." + a.name + ".view: the steps give sizes " + shape_text(sizes) +
                                           " where its shape is " + shape_text(t->sizes));
  }
}

}  // namespace opc
