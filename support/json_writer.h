// A small streaming JSON writer for reports: correct escaping, no dependency.
//
//   JsonWriter w;
//   w.begin_object().key("version").value(1).key("ops").begin_array().end_array().end_object();
//   std::string text = w.str();
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace opc {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view v);
  JsonWriter& value(const char* v) { return value(std::string_view(v)); }
  JsonWriter& value(const std::string& v) { return value(std::string_view(v)); }
  JsonWriter& value(int64_t v);
  JsonWriter& value(uint64_t v);
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(double v);
  JsonWriter& value(bool v);
  JsonWriter& null();
  // Inserts already-serialised JSON as one value.
  JsonWriter& raw(std::string_view json);
  const std::string& str() const { return out_; }

 private:
  void separate();
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

std::string json_escape(std::string_view s);

}  // namespace opc
