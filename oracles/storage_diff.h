// Byte-level comparison of a tensor argument's storage before and after a call, and the
// maps from storage elements to view elements that the oracles phrase findings with.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "runners/observation.h"

namespace opc {

// Whether any byte of the storage changed (one memcmp).
bool any_change(const ArgObservation& a);

// Storage elements (of the flat, guarded storage) whose bytes changed. Empty, after one
// memcmp, in the common case.
std::vector<int64_t> changed_elements(const ArgObservation& a);

// True when no byte outside the view changed, known cheaply: nothing changed at all, or
// the view has no gaps between its elements and the bytes before its first element and
// after its last one (guard bands, the rest of its base) are unchanged. False: maybe some
// did (changed_elements and footprint tell).
bool unchanged_outside_gapless_view(const ArgObservation& a);

// 1 for every storage element some element of `t` occupies; `t` must live in `storage`.
std::vector<uint8_t> footprint(const at::Tensor& t, const at::Tensor& storage);

// How many elements of `t` (living in `storage`) hold exactly the bytes `value`; `first`
// gets the lowest storage element among them (-1 when none).
int64_t elements_holding(const at::Tensor& t, const at::Tensor& storage, const std::vector<uint8_t>& value,
                         int64_t& first);

// "[i, j]": the index in `view` of the element stored at `storage_elem`, or "" if none.
std::string view_index(const at::Tensor& view, const at::Tensor& storage, int64_t storage_elem);

// "0x7fa5a5a5": one element's bytes, before or after, as a little-endian hex number.
std::string element_hex(const uint8_t* bytes, size_t item);

// The element's bytes before and after: "0x3f800000 -> 0x00000000".
std::string change_text(const ArgObservation& a, int64_t storage_elem);

}  // namespace opc
