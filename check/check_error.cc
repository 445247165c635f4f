#include "check/check_error.h"

#include <rapidcheck/GenerationFailure.h>

#include "support/error_text.h"

namespace opc {

std::string in_flight_text(bool& contract_named) {
  contract_named = false;
  try {
    throw;
  } catch (const CheckError& e) {
    contract_named = true;
    return e.what();
  } catch (const ContractError& e) {
    contract_named = true;
    return e.what();
  } catch (const rc::GenerationFailure& e) {
    return std::string("no case meets the constraints and requires (") + e.what() +
           "); loosen them or widen the dims";
  } catch (const EvalError& e) {
    return std::string("a contract expression failed: ") + e.what();
  } catch (const std::exception& e) {
    return error_text(e);
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

std::string check_error_text(const Contract& contract) {
  bool named = false;
  const std::string text = in_flight_text(named);
  return named ? text : contract.file + ": " + text;
}

}  // namespace opc
