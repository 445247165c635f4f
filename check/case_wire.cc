#include "check/case_wire.h"

namespace opc {

void put_case(WireOut& w, const Case& c) {
  w.u64(c.values.size());
  for (int64_t v : c.values) w.i64(v);
  w.u64(c.args.size());
  for (const auto& a : c.args) {
    if (const auto* t = std::get_if<TensorCase>(&a)) {
      w.u64(0).i64(static_cast<int64_t>(t->dtype)).u64(t->sizes.size());
      for (int64_t d : t->sizes) w.i64(d);
      w.i64(static_cast<int64_t>(t->layout)).i64(t->slack).u64(t->none).u64(static_cast<uint64_t>(t->form));
      w.u64(t->carved.strides.size());
      for (int64_t s : t->carved.strides) w.i64(s);
      w.i64(t->carved.offset).i64(t->carved.base_elems).i64(t->carved.buffer);
      continue;
    }
    const ScalarValue& v = std::get<ScalarValue>(a);
    w.u64(1).u64(v.index());
    if (const bool* b = std::get_if<bool>(&v)) w.u64(*b);
    else if (const int64_t* i = std::get_if<int64_t>(&v)) w.i64(*i);
    else if (const double* d = std::get_if<double>(&v)) {
      uint64_t bits;
      std::memcpy(&bits, d, sizeof bits);
      w.u64(bits);
    } else if (const std::string* s = std::get_if<std::string>(&v)) w.str(*s);
  }
  w.u64(c.data_seed).i64(c.inplace);
  w.u64(static_cast<uint64_t>(c.misuse.kind)).i64(c.misuse.arg).i64(c.misuse.dim).i64(c.misuse.value);
  w.u64(c.fenced);
}

Case get_case(WireIn& r) {
  Case c;
  c.values.resize(r.u64());
  for (int64_t& v : c.values) v = r.i64();
  const uint64_t n = r.u64();
  for (uint64_t i = 0; i < n; ++i) {
    if (r.u64() == 0) {
      TensorCase t;
      t.dtype = static_cast<c10::ScalarType>(r.i64());
      t.sizes.resize(r.u64());
      for (int64_t& d : t.sizes) d = r.i64();
      t.layout = static_cast<Layout>(r.i64());
      t.slack = r.i64();
      t.none = r.u64() != 0;
      t.form = static_cast<ValueForm>(r.u64());
      t.carved.strides.resize(r.u64());
      for (int64_t& s : t.carved.strides) s = r.i64();
      t.carved.offset = r.i64();
      t.carved.base_elems = r.i64();
      t.carved.buffer = static_cast<int>(r.i64());
      c.args.emplace_back(std::move(t));
      continue;
    }
    switch (r.u64()) {
      case 0:
        c.args.emplace_back(ScalarValue{});
        break;
      case 1:
        c.args.emplace_back(ScalarValue{r.u64() != 0});
        break;
      case 2:
        c.args.emplace_back(ScalarValue{r.i64()});
        break;
      case 3: {
        const uint64_t bits = r.u64();
        double d;
        std::memcpy(&d, &bits, sizeof d);
        c.args.emplace_back(ScalarValue{d});
        break;
      }
      default:
        c.args.emplace_back(ScalarValue{r.str()});
        break;
    }
  }
  c.data_seed = r.u64();
  c.inplace = static_cast<int>(r.i64());
  c.misuse.kind = static_cast<MisuseKind>(r.u64());
  c.misuse.arg = static_cast<int>(r.i64());
  c.misuse.dim = static_cast<int>(r.i64());
  c.misuse.value = r.i64();
  c.fenced = r.u64() != 0;
  return c;
}

void put_modes(WireOut& w, const std::vector<Mode>& modes) {
  w.u64(modes.size());
  for (Mode m : modes) w.u64(static_cast<uint64_t>(m));
}

std::vector<Mode> get_modes(WireIn& r) {
  std::vector<Mode> modes(r.u64());
  for (Mode& m : modes) m = static_cast<Mode>(r.u64());
  return modes;
}

void put_findings(WireOut& w, const std::vector<Finding>& findings, const std::vector<int>& written) {
  w.u64(findings.size());
  for (const Finding& f : findings)
    w.u64(static_cast<uint64_t>(f.clause)).u64(static_cast<uint64_t>(f.mode)).str(f.message);
  w.u64(written.size());
  for (int i : written) w.i64(i);
}

void get_findings(WireIn& r, std::vector<Finding>& findings, std::vector<int>& written) {
  findings.resize(r.u64());
  for (Finding& f : findings) {
    f.clause = static_cast<Clause>(r.u64());
    f.mode = static_cast<Mode>(r.u64());
    f.message = r.str();
  }
  written.resize(r.u64());
  for (int& w : written) w = static_cast<int>(r.i64());
}

}  // namespace opc
