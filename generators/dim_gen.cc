#include "generators/dim_gen.h"

#include <rapidcheck/Random.h>
#include <rapidcheck/Seq.h>
#include <rapidcheck/Shrinkable.h>
#include <rapidcheck/seq/Create.h>
#include <rapidcheck/seq/Operations.h>
#include <rapidcheck/shrink/Shrink.h>

#include <algorithm>

namespace opc {
namespace {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// The members of one favoured family that lie in [lo, hi], ascending. An affine family
// (k * tp_size + c, the common case) is handled in closed form; any other is enumerated
// over a bounded k.
class Members {
 public:
  Members(const Family& f, int64_t lo, int64_t hi) {
    auto f0 = f(0), f1 = f(1), f2 = f(2), f3 = f(3);
    if (f0 && f1 && f2 && f3) {
      const int64_t d = *f1 - *f0;
      if (d > 0 && *f2 - *f1 == d && *f3 - *f2 == d) {
        affine_ = true;
        a_ = *f0;
        d_ = d;
        kmin_ = std::max<int64_t>(0, -floor_div(a_ - lo, d_));
        kmax_ = floor_div(hi - a_, d_);
        return;
      }
    }
    for (int64_t k = 0; k < 64; ++k)
      if (auto v = f(k); v && *v >= lo && *v <= hi) list_.push_back(*v);
    std::sort(list_.begin(), list_.end());
    list_.erase(std::unique(list_.begin(), list_.end()), list_.end());
  }

  int64_t count() const {
    return affine_ ? std::max<int64_t>(0, kmax_ - kmin_ + 1) : static_cast<int64_t>(list_.size());
  }
  int64_t nth(int64_t i) const { return affine_ ? a_ + d_ * (kmin_ + i) : list_[i]; }
  // How many members are < x.
  int64_t count_below(int64_t x) const {
    if (!affine_) return std::lower_bound(list_.begin(), list_.end(), x) - list_.begin();
    const int64_t k = floor_div(x - 1 - a_, d_);  // last k with f(k) < x
    return std::clamp<int64_t>(k - kmin_ + 1, 0, count());
  }

 private:
  bool affine_ = false;
  int64_t a_ = 0, d_ = 1, kmin_ = 0, kmax_ = -1;
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
    // Early cases stay near lo; the spread reaches hi as size approaches 100.
    const int64_t span = hi - lo;
    const int64_t reach = static_cast<int64_t>(
        static_cast<__int128>(span) * std::clamp(size, 5, 100) / 100);
    const uint64_t roll = r.next() % 10;
    int64_t v;
    if (!members.empty() && roll < 5) {
      const Members& m = members[r.next() % members.size()];
      int64_t n = m.count_below(lo + reach + 1);
      if (n == 0) n = m.count();
      v = m.nth(static_cast<int64_t>(r.next() % static_cast<uint64_t>(n)));
    } else if (roll < 7) {
      const int64_t edges[] = {lo, std::min(lo + 1, hi), hi};
      v = edges[r.next() % 3];
    } else {
      v = lo + static_cast<int64_t>(r.next() % (static_cast<uint64_t>(reach) + 1));
    }
    return rc::shrinkable::shrinkRecur(
        v, [lo, members](int64_t x) { return shrinks_of(x, lo, members); });
  });
}

}  // namespace opc
