// Simulated process state that ported ops read in place of vLLM's globals.
//
// vLLM ops such as sequence_parallel_chunk_impl read the tensor-parallel world size and
// rank from process-wide state. Ports read them here instead; the runner sets each
// `context:` value of the contract before every call:
//
//   opc::sim::set_int("tp_size", 4);           // runner, per case
//   int64_t tp = opc::sim::get_int("tp_size"); // port
//
// Kept in its own tiny shared library (libopcontract_context.so) so that a user's op
// library can read the same state without linking the rest of opcontract.
#pragma once

#include <cstdint>
#include <string_view>

namespace opc::sim {

void set_int(std::string_view name, int64_t value);
// Throws (c10::Error) naming the value when no contract set it.
int64_t get_int(std::string_view name);
void clear();

}  // namespace opc::sim

// The same setter with C linkage, for hosts that are not C++ (Python's ctypes):
//   ctypes.CDLL("libopcontract_context.so").opc_sim_set_int(b"tp_size", 4)
extern "C" void opc_sim_set_int(const char* name, int64_t value);
