// crawleval plot: runs the built-in copy of python/crawleval/plot.py with a Python 3 that has
// matplotlib ($CRAWLEVAL_PYTHON, else python3 on the PATH), so the figures of the command line and
// of Result.plot() are drawn by the same code.
#include "cli_plot.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "crawleval/base/error.hpp"
#include "options.hpp"

namespace crawleval::cli {

namespace {

struct PlotArgs {
  std::vector<std::string> results;
  std::string out, kind = "auto", title;
  uint64_t dpi = 120;
};

/// Runs `python -c SCRIPT ARGS...` and returns its exit code; 2 with a message when Python cannot
/// be started.
int run_python(const std::string& python, const std::vector<std::string>& args) {
  std::vector<std::string> argv_text = {python, "-c", plot_script()};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout.flush();
  const pid_t pid = fork();
  if (pid < 0)
    throw Error(std::string("crawleval plot: cannot start Python: ") + std::strerror(errno));
  if (pid == 0) {
    setenv("CRAWLEVAL_PLOT_PROG", "crawleval plot", 1);
    execvp(python.c_str(), argv.data());
    _exit(127);  // the parent explains
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw Error(std::string("crawleval plot: ") + std::strerror(errno));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    std::cerr << "crawleval plot: error: cannot run '" << printable(python, 256)
              << "': crawleval plot needs Python 3 with matplotlib (pip install matplotlib); set "
                 "CRAWLEVAL_PYTHON to the Python to use\n";
    return kExitBadInput;
  }
  if (WIFEXITED(status))
    return WEXITSTATUS(status) == 0   ? kExitOk
           : WEXITSTATUS(status) == 2 ? kExitBadInput
                                      : kExitFailure;
  std::cerr << "crawleval plot: error: Python ended by signal " << WTERMSIG(status) << "\n";
  return kExitFailure;
}

}  // namespace

std::function<int()> add_plot_command(CLI::App& app) {
  auto a = std::make_shared<PlotArgs>();
  CLI::App* plot = app.add_subcommand(
      "plot",
      "draw results (JSON of run or fresh run) with matplotlib: one result gives its rewards with "
      "their 95% intervals against the bound and its reward per epoch with the warm-up shaded; "
      "several give the budget sweep, one curve per policy");
  plot->add_option("results", a->results, "RESULT.json files of crawleval run or fresh run")
      ->required();
  plot->add_option("--out,-o", a->out,
                   "image to write: .png, .svg or .pdf (default: the first result with .png)");
  plot->add_option("--kind", a->kind, "auto | rewards | series | sweep")
      ->check(CLI::IsMember({"auto", "rewards", "series", "sweep"}))
      ->capture_default_str();
  plot->add_option("--title", a->title, "the figure's title (default: population and budget)");
  plot->add_option("--dpi", a->dpi, "resolution of a .png")
      ->capture_default_str()
      ->check(integer_in(20, 2000));
  return [a, plot]() -> int {
    if (!plot->parsed()) return -1;
    std::vector<std::string> args = a->results;
    if (!a->out.empty()) args.insert(args.end(), {"--out", a->out});
    if (!a->title.empty()) args.insert(args.end(), {"--title", a->title});
    args.insert(args.end(), {"--kind", a->kind, "--dpi", std::to_string(a->dpi)});
    // Results named like options ("-x.json") stay file names.
    for (std::size_t k = 0; k < a->results.size(); ++k)
      if (!args[k].empty() && args[k][0] == '-') args[k] = "./" + args[k];
    const char* env = std::getenv("CRAWLEVAL_PYTHON");
    return run_python(env && *env ? env : "python3", args);
  };
}

}  // namespace crawleval::cli
