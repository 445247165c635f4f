#include "check/case_worker.h"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

#include "check/case_judge.h"
#include "check/case_wire.h"
#include "check/check_error.h"
#include "check/check_turn.h"
#include "generators/misuse.h"
#include "runners/cudagraph_runner.h"
#include "runners/python/bridge.h"

namespace opc {
namespace {

bool send_all(int fd, const std::string& payload) {
  WireOut frame;
  frame.u64(payload.size());
  const std::string bytes = frame.bytes() + payload;
  for (size_t at = 0; at < bytes.size();) {
    const ssize_t n = send(fd, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += static_cast<size_t>(n);
  }
  return true;
}

enum class ReadStatus { Ok, Closed, TimedOut };

using Deadline = std::function<std::chrono::steady_clock::time_point()>;

// Time one torch.compile call may take on top of a case's limit.
constexpr std::chrono::seconds kCompileAllowance{600};

int64_t steady_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t steady_ms() { return steady_us() / 1000; }

// Reads exactly n bytes, waiting at most until `deadline()` (none when max()), which may
// move while it waits: it is asked again at least every 100 ms.
ReadStatus read_exactly(int fd, char* out, size_t n, const Deadline& deadline) {
  using Clock = std::chrono::steady_clock;
  for (size_t at = 0; at < n;) {
    int wait_ms = -1;
    if (const auto until = deadline(); until != Clock::time_point::max()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
      if (left.count() <= 0) return ReadStatus::TimedOut;
      wait_ms = static_cast<int>(std::min<int64_t>(left.count(), 100));
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, wait_ms);
    if (ready < 0 && errno != EINTR) return ReadStatus::Closed;
    if (ready <= 0) continue;  // interrupted, or time to ask the deadline again
    const ssize_t got = recv(fd, out + at, n - at, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return ReadStatus::Closed;
    at += static_cast<size_t>(got);
  }
  return ReadStatus::Ok;
}

ReadStatus read_frame(int fd, std::string& payload, const Deadline& deadline) {
  uint64_t size = 0;
  if (ReadStatus s = read_exactly(fd, reinterpret_cast<char*>(&size), sizeof size, deadline); s != ReadStatus::Ok)
    return s;
  payload.assign(size, '\0');
  return read_exactly(fd, payload.data(), size, deadline);
}

std::string death_text(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return "the op killed the process with signal " + std::to_string(sig) + " (" +
           (name ? std::string("SIG") + name + ", " : std::string()) + strsignal(sig) + ")";
  }
  if (WIFEXITED(status)) return "the op ended the process with exit status " + std::to_string(WEXITSTATUS(status));
  return "the worker process ended (wait status " + std::to_string(status) + ")";
}

// One case judged in this process: what the worker does for each request, and all that
// happens without isolation.
CaseOutcome judge_here(const CaseOps& ops, const Contract& contract, const Case& c, const std::vector<Mode>& modes) {
  CaseOutcome out;
  std::vector<bool> written(contract.args.size(), false);
  try {
    out.findings = case_findings(ops, contract, c, CaseFacts(c, contract), modes, &written);
  } catch (const python::CaseDeclined& e) {
    out.declined = e.what();
    return out;
  }
  for (size_t i = 0; i < written.size(); ++i)
    if (written[i]) out.written.push_back(static_cast<int>(i));
  return out;
}

// The worker's side: serves requests until the parent hangs up.
[[noreturn]] void serve(int fd, const CaseOps& ops, const Contract& contract) {
  std::string request;
  const Deadline never = [] { return std::chrono::steady_clock::time_point::max(); };
  while (read_frame(fd, request, never) == ReadStatus::Ok) {
    WireOut reply;
    try {
      if (request.empty()) throw std::runtime_error("case worker: empty request");
      if (request[0] == 'G') {
        reply.str("S").str(opc::cudagraph_unavailable());
      } else {
        const std::string body = request.substr(1);
        WireIn in(body);
        const std::vector<Mode> modes = get_modes(in);
        const Case c = get_case(in);
        const CaseOutcome judged = judge_here(ops, contract, c, modes);
        if (!judged.declined.empty()) reply.str("D").str(judged.declined);
        else put_findings(reply.str("R"), judged.findings, judged.written);
      }
    } catch (...) {
      reply = WireOut();
      reply.str("E").str(check_error_text(contract));
    }
    // Everything the case printed is in the capture before the parent reads it.
    flush_standard_streams();
    python::flush_output();
    if (!send_all(fd, reply.bytes())) break;
  }
  _exit(0);  // never run the parent's atexit handlers or flush its stdio buffers
}

}  // namespace

IsolationOptions isolation_for(const Contract& contract, const CheckOptions& options) {
  return {options.isolate,
          contract.time_limit_s > 0 && !options.timeout_given ? contract.time_limit_s : options.case_timeout_s,
          options.capture_output};
}

CaseWorker::CaseWorker(const CaseOps& ops, const Contract& contract, IsolationOptions options)
    : ops_(ops), contract_(contract), options_(options) {
  if (!options_.isolate) return;
  if (options_.capture_output) output_ = std::make_unique<OutputCapture>();
  void* page = mmap(nullptr, sizeof(SharedPage), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) throw std::runtime_error(std::string("case worker: mmap: ") + strerror(errno));
  shared_ = static_cast<volatile SharedPage*>(page);
  ops_.on_mode = [shared = shared_](Mode m) {
    clock_mode(shared);
    shared->mode = static_cast<int>(m);
  };
  ops_.off_the_clock = [shared = shared_](bool begin) {
    const int64_t now = steady_ms();
    if (begin) {
      if (shared->depth++ == 0) shared->off_clock_since_ms = now;
    } else if (shared->depth > 0 && --shared->depth == 0) {
      shared->grace_ms = shared->grace_ms + (now - shared->off_clock_since_ms);
      shared->off_clock_since_ms = 0;
    }
  };
}

CaseWorker::~CaseWorker() {
  stop();
  if (shared_) munmap(const_cast<SharedPage*>(shared_), sizeof(SharedPage));
}

void CaseWorker::start() {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    throw std::runtime_error(std::string("case worker: socketpair: ") + strerror(errno));
  // The child inherits unflushed stdio buffers; flush them so nothing prints twice.
  flush_standard_streams();
  // The workers run the cudagraph mode and Python's CUDA checks: CUDA initialised here
  // would fail in them ("initialization error"), and the op would be blamed for it.
  if (python::cuda_initialized())
    throw std::runtime_error(
        "case worker: torch initialised CUDA in the checking process before it forked the "
        "worker, which then cannot use the GPU (an opcontract defect; --no-python avoids it)");
  python::before_fork();
  const pid_t pid = fork();
  if (pid == 0) python::after_fork_child();
  else python::after_fork_parent();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    throw std::runtime_error(std::string("case worker: fork: ") + strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the checker
    // A group of its own, so that killing the worker kills what it started too (vLLM
    // inspects model classes in a subprocess, which would outlive a killed worker).
    setpgid(0, 0);
    python::set_state_hook_clock(ops_.off_the_clock);  // a hook's state building is not the op's time
    const rlimit no_core{0, 0};                        // a crashing op is expected here: no core dumps
    setrlimit(RLIMIT_CORE, &no_core);
    // Ctrl-C stops the campaign in the parent, which then kills this worker: were the
    // worker to die of it first, the case in flight would read as a crash.
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    if (!options_.crash_handlers)
      for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) signal(sig, SIG_DFL);
    if (output_) {
      output_->redirect();
      std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a crash keeps what was printed before it
    }
    serve(fds[1], ops_, contract_);
  }
  close(fds[1]);
  setpgid(pid, pid);  // as the child does, so that no kill(-pid) can come before it
  pid_ = pid;
  ++forked_;
  to_child_ = from_child_ = fds[0];
}

void CaseWorker::stop() {
  if (pid_ < 0) return;
  close(to_child_);
  kill(-pid_, SIGKILL);
  int status;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  to_child_ = from_child_ = -1;
}

std::string CaseWorker::request(char kind, const std::string& body, CaseOutcome* died) {
  using Clock = std::chrono::steady_clock;
  if (pid_ < 0) start();
  shared_->mode = static_cast<int>(Mode::Eager);
  shared_->depth = 0;
  shared_->grace_ms = 0;
  shared_->off_clock_since_ms = 0;
  shared_->mode_since_us = 0;
  for (volatile int64_t& us : shared_->mode_us) us = 0;
  const auto start = Clock::now();
  const auto limit = std::chrono::microseconds(static_cast<int64_t>(std::ceil(options_.timeout_s * 1e6)));
  // The limit is for the op: time the worker spends off the clock (torch.compile calls,
  // state hooks) is added, and such a call in progress gets up to kCompileAllowance more
  // (a compile, not a hang).
  const std::function<Clock::time_point()> deadline = [&] {
    if (options_.timeout_s <= 0) return Clock::time_point::max();
    const auto by_op = start + limit + std::chrono::milliseconds(shared_->grace_ms);
    const int64_t since = shared_->off_clock_since_ms;
    if (!since) return by_op;
    return std::max(by_op, Clock::time_point(std::chrono::milliseconds(since)) + limit + kCompileAllowance);
  };
  std::string reply;
  ReadStatus status = ReadStatus::Closed;
  {
    const CheckTurn::Waiting waiting;  // checks side by side go on while this one waits
    if (send_all(to_child_, std::string(1, kind) + body)) status = read_frame(from_child_, reply, deadline);
  }
  if (status == ReadStatus::Ok) return reply;

  const Mode mode = static_cast<Mode>(shared_->mode);
  std::string why;
  if (status == ReadStatus::TimedOut) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", options_.timeout_s);
    why = std::string("the op did not finish within the time limit of ") + limit +
          " s per case (an endless loop or a deadlock, or raise the limit with --case-timeout); "
          "the worker was killed";
    died->hung = true;
    kill(-pid_, SIGKILL);
  }
  int wstatus = 0;
  while (waitpid(pid_, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (why.empty()) why = death_text(wstatus);
  kill(-pid_, SIGKILL);  // what the dead worker started goes with it
  close(to_child_);
  pid_ = -1;
  to_child_ = from_child_ = -1;
  died->worker_died = true;
  died->findings.push_back({Clause::Crash, std::string("in the ") + to_string(mode) + " mode, " + why, mode});
  return "";
}

std::unique_ptr<CaseWorker> CaseWorker::mistakes_twin() const {
  IsolationOptions fresh = options_;
  fresh.fresh_after_finding = true;
  return std::make_unique<CaseWorker>(ops_, contract_, fresh);
}

std::unique_ptr<CaseWorker> CaseWorker::crash_handlers_twin() const {
  IsolationOptions with = options_;
  with.crash_handlers = true;
  auto twin = std::make_unique<CaseWorker>(ops_, contract_, with);
  twin->set_modes(modes_);
  return twin;
}

CaseOutcome CaseWorker::run(const Case& c) {
  if (!options_.isolate) return judge_here(ops_, contract_, c, modes_);
  CaseOutcome out = run_isolated(c);
  if (c.misuse && out.worker_died) attribute_fault(c, out);
  if (options_.fresh_after_finding && !out.findings.empty()) stop();
  return out;
}

void CaseWorker::attribute_fault(const Case& c, CaseOutcome& out) {
  CaseOutcome valid = run_isolated(fenced_valid_call(c, contract_));
  if (valid.worker_died) {
    out = std::move(valid);
    return;
  }
  for (Finding& f : out.findings) f.message += " Without the mistake, the call runs clean in the same memory.";
}

void CaseWorker::clock_mode(volatile SharedPage* shared) {
  const int64_t now = steady_us();
  if (shared->mode_since_us)
    shared->mode_us[shared->mode] = shared->mode_us[shared->mode] + (now - shared->mode_since_us);
  shared->mode_since_us = now;
}

std::map<Mode, double> CaseWorker::settle_mode_clock() {
  clock_mode(shared_);
  shared_->mode_since_us = 0;
  std::map<Mode, double> seconds;
  for (Mode m : kAllModes)
    if (const int64_t us = shared_->mode_us[static_cast<int>(m)]) seconds[m] = static_cast<double>(us) / 1e6;
  return seconds;
}

CaseOutcome CaseWorker::run_isolated(const Case& c) {
  WireOut body;
  put_modes(body, modes_);
  put_case(body, c);
  CaseOutcome out;
  if (output_) output_->take();  // what came before this case is not its output
  const std::string reply = request('C', body.bytes(), &out);
  out.mode_seconds = settle_mode_clock();
  if (output_) out.output = output_->take();
  if (out.worker_died) {
    for (Finding& f : out.findings) f = judged_death(f, out.hung, c, contract_);
    return out;
  }
  WireIn in(reply);
  const std::string kind = in.str();
  if (kind == "E") throw CheckError(in.str());
  if (kind == "D") out.declined = in.str();
  else get_findings(in, out.findings, out.written);
  return out;
}

std::string CaseWorker::cudagraph_unavailable() {
  if (!options_.isolate) return opc::cudagraph_unavailable();
  CaseOutcome died;
  const std::string reply = request('G', "", &died);
  if (died.worker_died) return "the worker process died while checking for a GPU: " + died.findings[0].message;
  WireIn in(reply);
  in.str();
  return in.str();
}

}  // namespace opc
