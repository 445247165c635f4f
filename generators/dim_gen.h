// RapidCheck generators for integer values with edge bias, and how they shrink.
//
//   dim_gen(0, 512, {[&](int64_t k) { return k * tp; }})
//
// picks a favoured value f(k) half the time, an edge (lo, lo + 1, hi) a fifth of the
// time, and otherwise a uniform value whose spread grows with RapidCheck's size (small
// cases first). It shrinks towards lo, trying the smallest favoured values first: a
// failing multiple of tp_size shrinks to the smallest multiple that still fails.
#pragma once

#include <rapidcheck/Gen.h>
#include <rapidcheck/Random.h>
#include <rapidcheck/shrink/Shrink.h>
#include <rapidcheck/shrinkable/Create.h>
#include <rapidcheck/shrinkable/Transform.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <type_traits>
#include <vector>

namespace opc {

// A favoured family of values f(0), f(1), ... (e.g. k * tp_size + 1; nullopt where f
// cannot be evaluated), or a single favoured value (`favor: [7]`), which needs no f.
struct Family {
  template <class F, class = std::enable_if_t<std::is_invocable_r_v<std::optional<int64_t>, F, int64_t>>>
  Family(F f) : of_k(std::move(f)) {}  // NOLINT: a lambda is a family
  static Family single(int64_t v) {
    Family f([](int64_t) { return std::optional<int64_t>(); });
    f.only = v;
    return f;
  }
  std::function<std::optional<int64_t>(int64_t k)> of_k;
  std::optional<int64_t> only;  // when set, the family is this one value
};

rc::Gen<int64_t> dim_gen(int64_t lo, int64_t hi, std::vector<Family> favor);

// One of `choices`, uniformly, shrinking towards the first: contracts list the simplest
// dtype, layout or value first. (rc::gen::elementOf does not shrink at all.)
template <class T>
rc::Gen<T> choice_gen(std::vector<T> choices) {
  return rc::Gen<T>([choices = std::move(choices)](const rc::Random& random, int) {
    const int64_t i = static_cast<int64_t>(rc::Random(random).next() % choices.size());
    return rc::shrinkable::map(
        rc::shrinkable::shrinkRecur(i, [](int64_t x) { return rc::shrink::towards<int64_t>(x, 0); }),
        [choices](int64_t idx) { return choices[idx]; });
  });
}

}  // namespace opc
