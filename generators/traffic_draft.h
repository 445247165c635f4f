// A contract drafted from the calls a real program made of an op (generators/recording.h):
// what `opcontract draft QUALNAME --traffic RECORDING` writes.
//
//   std::string yaml = draft_from_traffic("_C::rms_norm", handle.schema(), calls);
//
// Each size that varies with another across every recorded call is one dim (named after
// the first argument and axis it sizes, ranged over what was recorded, its recorded values
// favoured); a tensor takes the dtypes it was recorded with (or another argument's, when
// always the same), the layouts its strides were laid out as, optional when None was seen,
// `values: {ints: [lo, hi]}` for an integer tensor; a scalar the values it was passed. What
// no layout lays out (a view of a larger buffer) is named in a comment. The draft admits
// every call it was made from whose geometry a layout states.
#pragma once

#include <ATen/core/function_schema.h>

#include <string>
#include <vector>

#include "generators/recording.h"

namespace opc {

std::string draft_from_traffic(const std::string& qualname, const c10::FunctionSchema& schema,
                               const std::vector<RecordedCall>& calls);

}  // namespace opc
