// What one run of an op did, in words: per tensor argument its metadata and which of its
// elements changed, per return its metadata and whose storage it lives in. For `opcontract
// replay`, where a person looks at one case closely.
//
//   out << observation_text(obs, contract);
#pragma once

#include <string>

#include "spec/contract.h"
#include "runners/observation.h"

namespace opc {

std::string observation_text(const Observation& obs, const Contract& contract);

}  // namespace opc
