#include "check/check_turn.h"

#include <mutex>

namespace opc {
namespace {

std::mutex& turn() {
  static std::mutex m;
  return m;
}

thread_local bool g_holds_turn = false;

}  // namespace

CheckTurn::CheckTurn() : took_(!g_holds_turn) {
  if (!took_) return;
  turn().lock();
  g_holds_turn = true;
}

CheckTurn::~CheckTurn() {
  if (!took_) return;
  g_holds_turn = false;
  turn().unlock();
}

CheckTurn::Waiting::Waiting() : gave_up_(g_holds_turn) {
  if (!gave_up_) return;
  g_holds_turn = false;
  turn().unlock();
}

CheckTurn::Waiting::~Waiting() {
  if (!gave_up_) return;
  turn().lock();
  g_holds_turn = true;
}

}  // namespace opc
