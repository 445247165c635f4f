#include "oracles/storage_diff.h"

#include <cstring>

namespace opc {
namespace {

// Calls f(storage_element, linear_index) for every element of t, in row-major order.
template <class F>
void for_each_element(const at::Tensor& t, const at::Tensor& storage, F&& f) {
  const int64_t n = t.numel();
  if (n == 0) return;
  const int64_t item = t.element_size();
  const int64_t base =
      (static_cast<const char*>(t.data_ptr()) - static_cast<const char*>(storage.data_ptr())) / item;
  const int64_t rank = t.dim();
  std::vector<int64_t> idx(rank, 0);
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  int64_t offset = base;
  for (int64_t lin = 0; lin < n; ++lin) {
    f(offset, lin);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d]) {
        offset += strides[d];
        break;
      }
      offset -= strides[d] * (sizes[d] - 1);
      idx[d] = 0;
    }
  }
}

}  // namespace

std::vector<int64_t> changed_elements(const ArgObservation& a) {
  std::vector<int64_t> out;
  const size_t n = a.bytes_before.size();
  const auto* after = static_cast<const uint8_t*>(a.storage.data_ptr());
  if (n == 0 || std::memcmp(a.bytes_before.data(), after, n) == 0) return out;
  const size_t item = a.storage.element_size();
  for (size_t e = 0; e * item < n; ++e)
    if (std::memcmp(a.bytes_before.data() + e * item, after + e * item, item) != 0)
      out.push_back(static_cast<int64_t>(e));
  return out;
}

std::vector<uint8_t> footprint(const at::Tensor& t, const at::Tensor& storage) {
  std::vector<uint8_t> mask(storage.numel(), 0);
  for_each_element(t, storage, [&](int64_t off, int64_t) {
    if (off >= 0 && off < static_cast<int64_t>(mask.size())) mask[off] = 1;
  });
  return mask;
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
