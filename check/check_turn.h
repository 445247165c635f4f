// Checks side by side in one process (`check --jobs`, one thread per check) take turns at
// everything they do here, and run side by side only where the cost is: in their workers.
// RapidCheck's generation and shrinking keep state that is not thread-safe, and a worker
// must not be forked while another thread holds a lock the worker would inherit held (the
// dispatcher's, the embedded Python's), so a check's thread holds the turn while it sets
// up, draws, shrinks and forks, and gives it up while it waits for its worker's reply.
//
//   CheckTurn turn;                      // check_contract: for the whole check
//   { CheckTurn::Waiting waiting; ... }  // case_worker: around waiting for the worker
//
// A thread that holds no turn (bench, fuzz: one check at a time) is not held up by Waiting.
#pragma once

namespace opc {

class CheckTurn {
 public:
  CheckTurn();
  ~CheckTurn();
  CheckTurn(const CheckTurn&) = delete;
  CheckTurn& operator=(const CheckTurn&) = delete;

  // Gives up this thread's turn, if it holds one, for its lifetime.
  class Waiting {
   public:
    Waiting();
    ~Waiting();
    Waiting(const Waiting&) = delete;
    Waiting& operator=(const Waiting&) = delete;

   private:
    bool gave_up_;
  };

 private:
  bool took_;  // false when this thread already held the turn (a check inside a check)
};

}  // namespace opc
