#include "oracles/storage_diff.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace opc {
namespace {

// Calls f(storage_element, linear_index) for every element of t, in row-major order, a
// row of the innermost dim at a time.
template <class F>
void for_each_element(const at::Tensor& t, const at::Tensor& storage, F&& f) {
  const int64_t n = t.numel();
  if (n == 0) return;
  const int64_t item = t.element_size();
  const int64_t base =
      (static_cast<const char*>(t.data_ptr()) - static_cast<const char*>(storage.data_ptr())) / item;
  const int64_t rank = t.dim();
  if (rank == 0) return f(base, int64_t{0});
  std::vector<int64_t> idx(rank, 0);
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  const int64_t row = sizes[rank - 1], step = strides[rank - 1];
  int64_t offset = base;
  for (int64_t lin = 0; lin < n; lin += row) {
    for (int64_t j = 0; j < row; ++j) f(offset + j * step, lin + j);
    for (int64_t d = rank - 2; d >= 0; --d) {
      if (++idx[d] < sizes[d]) {
        offset += strides[d];
        break;
      }
      offset -= strides[d] * (sizes[d] - 1);
      idx[d] = 0;
    }
  }
}

// Indices of the elements (of `item` bytes, compared as one word) that differ.
template <class Word>
void push_differing(const uint8_t* before, const uint8_t* after, size_t elems, std::vector<int64_t>& out) {
  for (size_t e = 0; e < elems; ++e) {
    Word b, a;
    std::memcpy(&b, before + e * sizeof(Word), sizeof(Word));
    std::memcpy(&a, after + e * sizeof(Word), sizeof(Word));
    if (a != b) out.push_back(static_cast<int64_t>(e));
  }
}

}  // namespace

bool any_change(const ArgObservation& a) {
  const size_t n = a.bytes_before.size();
  return n != 0 && std::memcmp(a.bytes_before.data(), a.storage.data_ptr(), n) != 0;
}

std::vector<int64_t> changed_elements(const ArgObservation& a) {
  std::vector<int64_t> out;
  if (!any_change(a)) return out;
  const auto* after = static_cast<const uint8_t*>(a.storage.data_ptr());
  const size_t item = a.storage.element_size(), elems = a.bytes_before.size() / item;
  switch (item) {
    case 1: push_differing<uint8_t>(a.bytes_before.data(), after, elems, out); break;
    case 2: push_differing<uint16_t>(a.bytes_before.data(), after, elems, out); break;
    case 4: push_differing<uint32_t>(a.bytes_before.data(), after, elems, out); break;
    case 8: push_differing<uint64_t>(a.bytes_before.data(), after, elems, out); break;
    default:
      for (size_t e = 0; e < elems; ++e)
        if (std::memcmp(a.bytes_before.data() + e * item, after + e * item, item) != 0)
          out.push_back(static_cast<int64_t>(e));
  }
  return out;
}

bool unchanged_outside_gapless_view(const ArgObservation& a) {
  if (!any_change(a)) return true;
  const int64_t item = a.storage.element_size();
  int64_t first = a.view.storage_offset(), last = first;
  for (int64_t d = 0; d < a.view.dim(); ++d) {
    if (a.view.size(d) == 0) return false;  // an empty view: every change is outside it
    const int64_t reach = (a.view.size(d) - 1) * a.view.stride(d);
    (reach < 0 ? first : last) += reach;
  }
  if (last - first + 1 != a.view.numel()) return false;  // gaps (or overlaps): not known here
  const auto* after = static_cast<const uint8_t*>(a.storage.data_ptr());
  const size_t head = static_cast<size_t>(first * item), tail = static_cast<size_t>((last + 1) * item);
  return std::memcmp(a.bytes_before.data(), after, head) == 0 &&
         std::memcmp(a.bytes_before.data() + tail, after + tail, a.bytes_before.size() - tail) == 0;
}

std::vector<uint8_t> footprint(const at::Tensor& t, const at::Tensor& storage) {
  std::vector<uint8_t> mask(storage.numel(), 0);
  for_each_element(t, storage, [&](int64_t off, int64_t) {
    if (off >= 0 && off < static_cast<int64_t>(mask.size())) mask[off] = 1;
  });
  return mask;
}

int64_t elements_holding(const at::Tensor& t, const at::Tensor& storage, const std::vector<uint8_t>& value,
                         int64_t& first) {
  const auto* bytes = static_cast<const uint8_t*>(storage.data_ptr());
  const size_t item = value.size();
  // An expanded tensor (a stride of 0) holds a storage element several times: count it once.
  bool repeats = false;
  for (int64_t d = 0; d < t.dim(); ++d) repeats |= t.stride(d) == 0 && t.size(d) > 1;
  std::vector<uint8_t> seen(repeats ? storage.numel() : 0, 0);
  int64_t count = 0;
  first = -1;
  uint64_t want = 0;  // the value as a word: one compare per element, not a memcmp call
  std::memcpy(&want, value.data(), std::min(item, sizeof want));
  for_each_element(t, storage, [&](int64_t off, int64_t) {
    uint64_t got = 0;
    std::memcpy(&got, bytes + off * item, std::min(item, sizeof got));
    if (got != want || (item > sizeof got && std::memcmp(bytes + off * item, value.data(), item) != 0)) return;
    if (repeats && std::exchange(seen[off], 1)) return;
    if (first < 0 || off < first) first = off;
    ++count;
  });
  return count;
}

std::string view_index(const at::Tensor& view, const at::Tensor& storage, int64_t storage_elem) {
  int64_t found = -1;
  for_each_element(view, storage, [&](int64_t off, int64_t lin) {
    if (found < 0 && off == storage_elem) found = lin;
  });
  if (found < 0) return "";
  std::vector<int64_t> idx(view.dim());
  for (int64_t d = view.dim() - 1; d >= 0; --d) {
    idx[d] = found % view.size(d);
    found /= view.size(d);
  }
  std::string s = "[";
  for (size_t i = 0; i < idx.size(); ++i) s += (i ? ", " : "") + std::to_string(idx[i]);
  return s + "]";
}

std::string element_hex(const uint8_t* bytes, size_t item) {
  static const char* digits = "0123456789abcdef";
  std::string s = "0x";
  for (size_t i = item; i-- > 0;) {
    s += digits[bytes[i] >> 4];
    s += digits[bytes[i] & 15];
  }
  return s;
}

std::string change_text(const ArgObservation& a, int64_t storage_elem) {
  const size_t item = a.storage.element_size();
  const auto* after = static_cast<const uint8_t*>(a.storage.data_ptr());
  return element_hex(a.bytes_before.data() + storage_elem * item, item) + " -> " +
         element_hex(after + storage_elem * item, item);
}

}  // namespace opc
