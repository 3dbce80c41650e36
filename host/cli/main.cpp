// crawleval: evaluate crawl-scheduling policies on the ephemeral-content model.
//
//   crawleval run      --paper-example | --sources FILE.csv | --synthetic N  --budget M  [...]
//   crawleval bound    --paper-example | --sources FILE.csv | --synthetic N  --budget M  [...]
//   crawleval optimal  --paper-example | --sources FILE.csv  --budget M
//   crawleval generate --synthetic N --seed S --out FILE.csv
//   crawleval learn mirrorsync|async-mirrorsync|async-psgd|lspe [...]
//   crawleval syncbandit optimum|generate [...]
//
// Exit codes: 0 success, 2 bad input (message names the file, line and field), 1 other failures,
// 130 / 143 interrupted (SIGINT / SIGTERM; unfinished outputs removed).
#include "command_line.hpp"
#include "crawleval/output_file.hpp"

int main(int argc, char** argv) {
  crawleval::install_interrupt_handlers("crawleval");
  return crawleval::cli::command_line(argc, argv);
}
