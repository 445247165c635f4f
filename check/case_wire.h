// The wire between the checker and its case worker (check/case_worker.h): requests and
// replies as length-prefixed fields of fixed width, in this process's own byte order (both
// ends are the same binary, forked).
//
//   WireOut w;  put_modes(w, modes);  put_case(w, c);      // a request's body
//   WireIn r(w.bytes());  std::vector<Mode> m = get_modes(r);  Case c = get_case(r);
//
// A WireIn reading past the end throws std::runtime_error ("truncated message").
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "spec/contract.h"
#include "generators/case.h"
#include "oracles/oracles.h"

namespace opc {

class WireOut {
 public:
  WireOut& u64(uint64_t v) {
    s_.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  WireOut& i64(int64_t v) { return u64(static_cast<uint64_t>(v)); }
  WireOut& str(const std::string& v) {
    u64(v.size());
    s_ += v;
    return *this;
  }
  const std::string& bytes() const { return s_; }

 private:
  std::string s_;
};

class WireIn {
 public:
  explicit WireIn(const std::string& s) : s_(s) {}
  uint64_t u64() {
    uint64_t v;
    need(sizeof v);
    std::memcpy(&v, s_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  int64_t i64() { return static_cast<int64_t>(u64()); }
  std::string str() {
    const uint64_t n = u64();
    need(n);
    std::string v = s_.substr(at_, n);
    at_ += n;
    return v;
  }

 private:
  void need(uint64_t n) const {
    if (n > s_.size() - at_) throw std::runtime_error("case worker: truncated message");
  }
  const std::string& s_;
  size_t at_ = 0;
};

void put_case(WireOut& w, const Case& c);
Case get_case(WireIn& r);

void put_modes(WireOut& w, const std::vector<Mode>& modes);
std::vector<Mode> get_modes(WireIn& r);

// Findings (clause, mode, message) and the indices of the arguments eager wrote.
void put_findings(WireOut& w, const std::vector<Finding>& findings, const std::vector<int>& written);
void get_findings(WireIn& r, std::vector<Finding>& findings, std::vector<int>& written);

}  // namespace opc
