// Recordings: the custom-op calls a real program made, as python/opcontract/record.py
// writes them (JSON Lines; docs/format.md, "Recordings"), read back for admission
// (generators/admission.h) and replay.
//
//   std::vector<RecordedCall> calls = read_recordings({"serve.jsonl"});  // RecordingError
//   for (const RecordedCall& c : calls) ... c.op, c.calls, c.args[i].tensor->strides
//
// Identical signatures (op, overload, call site, arguments) merge into one call, their
// counts added, their integer ranges and the programs that made them joined, whichever
// line or file they came from.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace opc {

// A file that is not a recording, or a line of one that is broken: "FILE:LINE: why".
struct RecordingError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct RecordedTensor {
  std::string dtype;  // as contracts spell it: float32, bfloat16, int64
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;         // storage offset, elements
  int storage = 0;            // index of its storage among the call's; shared index = shared storage
  int64_t storage_bytes = 0;
  int64_t align = 64;         // largest power of two (<= 64) dividing its data pointer
  bool contiguous = true;
  std::string device = "cpu";
  std::optional<int64_t> min, max;  // integer and bool tensors' value range
};

struct RecordedArg {
  std::string name;
  enum class Kind { Tensor, None, Value, Tensors, Object } kind = Kind::None;
  std::optional<RecordedTensor> tensor;
  std::vector<RecordedTensor> tensors;  // Tensor[]
  // A scalar as JSON text ("1e-06", "true", "\"amx\"", "[1, 2]"), or the object's type name.
  std::string value;
  bool is_string = false;  // value was a JSON string (its text without quotes)
};

struct RecordedCall {
  std::string op;        // namespace::name
  std::string overload;  // "default" for the default overload
  std::string site;      // file:line of the caller
  int64_t calls = 0;
  std::vector<RecordedArg> args;  // schema order
  std::string where;     // "FILE:LINE" of its first line, for messages
  // The recording sessions' `program`s that made it (a serve sweep's config ids), in the
  // order first seen; merged calls join theirs.
  std::vector<std::string> programs;
};

// Reads and merges recordings. A truncated last line (a killed process) is an error naming
// its line, as is any other malformed line: a recording is never half believed.
std::vector<RecordedCall> read_recordings(const std::vector<std::string>& paths);
// The same from text (`file` names it in errors); appends to `into`, merging.
void read_recording_text(const std::string& text, const std::string& file, std::vector<RecordedCall>& into);

// "float32[4, 8] strides [8, 1] offset 0 (storage 0)": one tensor for messages.
std::string recorded_tensor_text(const RecordedTensor& t);
// One line naming the call: "_C::rms_norm(out=float32[4, 64], input=..., epsilon=1e-06) at site".
std::string recorded_call_text(const RecordedCall& c);

}  // namespace opc
