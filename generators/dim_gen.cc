#include "generators/dim_gen.h"

#include <rapidcheck/Random.h>
#include <rapidcheck/Seq.h>
#include <rapidcheck/Shrinkable.h>
#include <rapidcheck/seq/Create.h>
#include <rapidcheck/seq/Operations.h>
#include <rapidcheck/shrink/Shrink.h>

#include <algorithm>
#include <climits>

namespace opc {
namespace {

using Wide = __int128;  // exact for any difference or product of two int64 values

Wide floor_div(Wide a, Wide b) {
  const Wide q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// The members of one favoured family that lie in [lo, hi], ascending. An affine family
// (k * tp_size + c, the common case) is handled in closed form, in wide arithmetic so
// that no family or range overflows; any other is enumerated over a bounded k.
class Members {
 public:
  Members(const Family& family, int64_t lo, int64_t hi) {
    if (family.only) {
      if (*family.only >= lo && *family.only <= hi) list_.push_back(*family.only);
      return;
    }
    const auto& f = family.of_k;
    auto f0 = f(0), f1 = f(1), f2 = f(2), f3 = f(3);
    if (f0 && f1 && f2 && f3) {
      const Wide d = Wide{*f1} - *f0;
      if (d > 0 && Wide{*f2} - *f1 == d && Wide{*f3} - *f2 == d) {
        affine_ = true;
        d_ = d;
        const Wide kmin = std::max<Wide>(0, -floor_div(Wide{*f0} - lo, d));
        const Wide kmax = floor_div(Wide{hi} - *f0, d);
        first_ = *f0 + d * kmin;
        // Beyond INT64_MAX members (a full-range family) only the first ones are picked.
        count_ = static_cast<int64_t>(std::clamp<Wide>(kmax - kmin + 1, 0, INT64_MAX));
        return;
      }
    }
    for (int64_t k = 0; k < 64; ++k)
      if (auto v = f(k); v && *v >= lo && *v <= hi) list_.push_back(*v);
    std::sort(list_.begin(), list_.end());
    list_.erase(std::unique(list_.begin(), list_.end()), list_.end());
  }

  int64_t count() const { return affine_ ? count_ : static_cast<int64_t>(list_.size()); }
  int64_t nth(int64_t i) const {
    return affine_ ? static_cast<int64_t>(first_ + d_ * i) : list_[i];
  }
  // How many members are < x.
  int64_t count_below(int64_t x) const {
    if (!affine_) return std::lower_bound(list_.begin(), list_.end(), x) - list_.begin();
    if (x <= first_) return 0;
    return static_cast<int64_t>(std::min<Wide>(floor_div(x - first_ - 1, d_) + 1, count_));
  }

 private:
  bool affine_ = false;
  Wide first_ = 0, d_ = 1;  // the smallest member in range, and the step
  int64_t count_ = 0;
  std::vector<int64_t> list_;
};

// Candidates tried first when shrinking x: lo, then the smallest favoured values and the
// largest one below x; after them RapidCheck's usual halving towards lo.
rc::Seq<int64_t> shrinks_of(int64_t x, int64_t lo, const std::vector<Members>& members) {
  std::vector<int64_t> first;
  auto add = [&](int64_t v) {
    if (v >= lo && v < x && std::find(first.begin(), first.end(), v) == first.end())
      first.push_back(v);
  };
  add(lo);
  for (const auto& m : members) {
    const int64_t below = m.count_below(x);
    for (int64_t i = 0; i < std::min<int64_t>(2, below); ++i) add(m.nth(i));
    if (below > 0) add(m.nth(below - 1));
  }
  std::sort(first.begin(), first.end());
  auto rest = rc::seq::filter(rc::shrink::towards(x, lo), [first](int64_t v) {
    return std::find(first.begin(), first.end(), v) == first.end();
  });
  return rc::seq::concat(rc::seq::fromContainer(std::move(first)), std::move(rest));
}

}  // namespace

rc::Gen<int64_t> dim_gen(int64_t lo, int64_t hi, std::vector<Family> favor) {
  return rc::Gen<int64_t>([=](const rc::Random& random, int size) {
    rc::Random r = random;
    if (hi <= lo) return rc::shrinkable::just(lo);
    std::vector<Members> members;
    for (const auto& f : favor)
      if (Members m(f, lo, hi); m.count() > 0) members.push_back(std::move(m));
    // Early cases stay near lo; the spread reaches hi as size approaches 100. Unsigned
    // and wide arithmetic: the full int64 range spans 2^64 - 1.
    const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    const uint64_t reach = static_cast<uint64_t>(
        static_cast<unsigned __int128>(span) * std::clamp(size, 5, 100) / 100);
    const int64_t top = static_cast<int64_t>(static_cast<uint64_t>(lo) + reach);  // <= hi
    const uint64_t roll = r.next() % 10;
    int64_t v;
    if (!members.empty() && roll < 5) {
      const Members& m = members[r.next() % members.size()];
      int64_t n = top == INT64_MAX ? m.count() : m.count_below(top + 1);
      if (n == 0) n = m.count();
      v = m.nth(static_cast<int64_t>(r.next() % static_cast<uint64_t>(n)));
    } else if (roll < 7) {
      const int64_t edges[] = {lo, lo + 1, hi};  // lo < hi here
      v = edges[r.next() % 3];
    } else {
      const uint64_t step = reach == UINT64_MAX ? r.next() : r.next() % (reach + 1);
      v = static_cast<int64_t>(static_cast<uint64_t>(lo) + step);
    }
    return rc::shrinkable::shrinkRecur(
        v, [lo, members](int64_t x) { return shrinks_of(x, lo, members); });
  });
}

}  // namespace opc
