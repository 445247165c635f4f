#include "runners/observation.h"

#include "generators/case.h"

namespace opc {

std::string metadata_change(const TensorMeta& b, const TensorMeta& a, bool with_data) {
  std::string s;
  auto add = [&](const std::string& what) { s += (s.empty() ? "" : "; ") + what; };
  if (b.sizes != a.sizes) add("sizes " + shape_text(b.sizes) + " -> " + shape_text(a.sizes));
  if (b.strides != a.strides) add("strides " + shape_text(b.strides) + " -> " + shape_text(a.strides));
  if (b.storage_offset != a.storage_offset)
    add("storage offset " + std::to_string(b.storage_offset) + " -> " + std::to_string(a.storage_offset));
  if (b.dtype != a.dtype)
    add(std::string("dtype ") + c10::toString(b.dtype) + " -> " + c10::toString(a.dtype));
  if (b.storage != a.storage) add("it was re-pointed to another storage");
  else if (with_data && b.data != a.data) add("its storage was reallocated");
  return s;
}

}  // namespace opc
