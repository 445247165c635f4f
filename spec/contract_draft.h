// A contract skeleton written from a registered op's schema: the start of onboarding an op.
//
//   std::string yaml = draft_contract("mylib::fused_norm", handle.schema());
//
// The draft loads and runs as it is: every tensor argument gets the same generic 2-D
// shape and float32, scalars a value of their type, mutable arguments (Tensor!,
// Tensor(a!)) a `mutates: {writes: all}` entry, returns their aliasing from the schema.
// Each guess is marked `TODO`: shapes, dtypes, layouts, requires and branches are what a
// person must state, since a schema does not say them.
#pragma once

#include <ATen/core/function_schema.h>

#include <string>

namespace opc {

std::string draft_contract(const std::string& qualname, const c10::FunctionSchema& schema);

// The schema as a contract's `schema:` states it (quoted, escaped), and the header lines a
// draft begins with up to `args:` exclusive; for drafts made from other sources
// (generators/traffic_draft.h).
std::string draft_schema_line(const c10::FunctionSchema& schema);
// `aliasing:`, `mutates:` and `modes:` as a draft ends, from the schema.
std::string draft_tail(const c10::FunctionSchema& schema);

}  // namespace opc
