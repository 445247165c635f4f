// Edge values: the inputs random normal data never draws, drawn as often as layouts are.
// Padded batches are full of all-zero rows; real activations have rows with one huge
// value, exact ties and infinities; integer metadata sits at the ends of its range and
// repeats. A floating tensor may get (besides its drawn values):
//
//   zero_rows     every other row all zero         constant_rows  each row one value
//   huge          one element near the dtype's largest finite magnitude
//   tied_max      each row's maximum twice         denormals      every other element subnormal
//   non_finite    a NaN, +inf and -inf (not for `values: finite`)
//
// and an `ints: [lo, hi]` tensor: low (lo throughout), high (hi throughout), repeated (one
// value throughout). One tensor case in three gets a form; shrinking goes to drawn values.
//
//   std::vector<ValueForm> forms = edge_forms(arg_spec, dtype);
//   t.form = *edge_form_gen(forms);      // inside a RapidCheck generator
//   to_string(ValueForm::ZeroRows)       // "zero_rows" (case files, descriptions)
#pragma once

#include <rapidcheck/Gen.h>

#include <optional>
#include <string>
#include <vector>

#include "spec/contract.h"
#include "generators/case.h"

namespace opc {

// The edge forms that apply to an argument of this dtype (empty: none).
std::vector<ValueForm> edge_forms(const ArgSpec& a, c10::ScalarType dtype);

// Drawn values two times in three, else one of `forms` (all equally); shrinks towards drawn
// values.
rc::Gen<ValueForm> edge_form_gen(std::vector<ValueForm> forms);

const char* to_string(ValueForm form);
std::optional<ValueForm> parse_value_form(const std::string& name);

}  // namespace opc
