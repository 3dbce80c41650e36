// crawleval: evaluate crawl-scheduling policies on the ephemeral-content model.
//
//   crawleval run      --paper-example | --sources FILE.csv | --synthetic N  --budget M  [...]
//   crawleval bound    --paper-example | --sources FILE.csv | --synthetic N  --budget M  [...]
//   crawleval optimal  --paper-example | --sources FILE.csv  --budget M
//   crawleval generate --synthetic N --seed S --out FILE.csv|FILE.cpop
//   crawleval convert  --sources FILE.csv|FILE.cpop --out FILE.cpop|FILE.csv
//   crawleval learn mirrorsync|async-mirrorsync|async-psgd|lspe [...]
//   crawleval syncbandit optimum|generate [...]
//
// Exit codes: 0 success, 2 bad input (message names the file, line and field), 1 other failures,
// 130 / 143 interrupted (SIGINT / SIGTERM; unfinished outputs removed).
#include <signal.h>
#include <unistd.h>

#include <cstdlib>

#include "command_line.hpp"
#include "crawleval/base/comm.hpp"
#include "crawleval/io/output_file.hpp"

int main(int argc, char** argv) {
  // A Ctrl-C or SIGTERM during start-up (the re-exec below) must not be lost: from here until the
  // handlers are in place the two signals are blocked, so one that arrives meanwhile stays
  // pending (across execv too, with the mask) and is handled when they are unblocked. Otherwise a
  // signal sent before the handlers existed was ignored where the shell had set it to be ignored
  // (a background job) and the run went on to exit 0. They are unblocked whatever mask the
  // program was started with: crawleval always ends cleanly on them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  sigprocmask(SIG_BLOCK, &stop, nullptr);
  // Idle OpenMP threads wait passively (sleep) instead of spinning: on a machine where another
  // process keeps a core busy, spinning threads at every epoch's barrier made the default thread
  // count slower than one thread (bench/cpu_peer.py measures it); unloaded, passive waiting costs
  // about 2%. libgomp reads OMP_WAIT_POLICY once, when it is loaded, before main: set it and run
  // the program again, once. Setting OMP_WAIT_POLICY (or GOMP_SPINCOUNT) yourself skips this.
  if (!std::getenv("OMP_WAIT_POLICY") && !std::getenv("GOMP_SPINCOUNT")) {
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv);  // returns only if it failed: go on with the default policy
  }
  crawleval::install_interrupt_handlers("crawleval");
  sigprocmask(SIG_UNBLOCK, &stop, nullptr);
  const int rc = crawleval::cli::command_line(argc, argv);
  crawleval::finalize_mpi();  // under mpirun: every rank got here (failures end them all)
  return rc;
}
