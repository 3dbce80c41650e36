// Every command's --help lists exactly the options its parser takes, and the synopsis of
// docs/cli.md ("## Synopsis") names exactly those options, command by command.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "cli/command_line.hpp"
#include "crawleval/evaluate/policy_registry.hpp"

namespace {

/// The names of an option as the parser lists them ("--budget,-M") and as a help line or the
/// synopsis writes any one of them.
std::set<std::string> split_names(const std::string& joined) {
  std::set<std::string> out;
  std::stringstream ss(joined);
  for (std::string n; std::getline(ss, n, ',');) out.insert(n);
  return out;
}

std::string output_of(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  for (std::size_t got; (got = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, got);
  pclose(p);
  return out;
}

/// The option names a --help text lists: "Options:" lines "  -M,--budget FLOAT ..." and
/// "Positionals:" lines "  results TEXT ...", help itself excluded.
std::vector<std::string> help_options(const std::string& help) {
  std::vector<std::string> names;
  std::stringstream ss(help);
  std::string section;
  for (std::string line; std::getline(ss, line);) {
    if (line == "Options:" || line == "Positionals:") {
      section = line;
      continue;
    }
    if (section.empty() || line.size() < 3 || line.compare(0, 2, "  ") != 0 || line[2] == ' ')
      continue;
    const std::string name = line.substr(2, line.find(' ', 2) - 2);
    if (name != "-h,--help") names.push_back(name);
  }
  return names;
}

/// Lowercase words of a command path, with alternatives: "mirrorsync|async-psgd".
bool command_word(const std::string& t) {
  if (t.empty() || t[0] < 'a' || t[0] > 'z') return false;
  for (char c : t)
    if (!((c >= 'a' && c <= 'z') || c == '-' || c == '|')) return false;
  return true;
}

/// docs/cli.md's synopsis: command path -> the flags its entry names.
std::map<std::string, std::set<std::string>> documented_synopsis() {
  std::ifstream in(CRAWLEVAL_DOCS_DIR "/cli.md");
  std::stringstream all;
  all << in.rdbuf();
  const std::string text = all.str();
  const std::size_t section = text.find("\n## Synopsis");
  const std::size_t open = text.find("```sh\n", section);
  const std::size_t close = text.find("\n```", open + 6);
  std::stringstream block(text.substr(open + 6, close - open - 6));
  std::vector<std::string> entries;
  for (std::string line; std::getline(block, line);) {
    if (line.rfind("crawleval ", 0) == 0)
      entries.push_back(line);
    else if (!line.empty() && line[0] == ' ' && !entries.empty())
      entries.back() += " " + line;
    else
      entries.push_back("");  // a comment, mpirun, a blank line: ends the entry
  }
  std::map<std::string, std::set<std::string>> out;
  for (const std::string& e : entries) {
    if (e.empty()) continue;
    std::stringstream words(e.substr(10));
    std::vector<std::vector<std::string>> path;
    std::string w;
    while (words >> w && command_word(w)) {
      path.emplace_back();
      std::stringstream alts(w);
      for (std::string a; std::getline(alts, a, '|');) path.back().push_back(a);
    }
    std::set<std::string> flags;
    for (std::size_t i = 0; i < e.size(); ++i)
      if (e[i] == '-' && i > 0 && std::string(" [|(").find(e[i - 1]) != std::string::npos) {
        std::size_t j = i;
        while (j < e.size() && (std::isalnum((unsigned char)e[j]) || e[j] == '-')) ++j;
        if (j > i + 1) flags.insert(e.substr(i, j - i));
        i = j;
      }
    std::vector<std::string> commands = {""};
    for (const auto& alts : path) {
      std::vector<std::string> next;
      for (const std::string& c : commands)
        for (const std::string& a : alts) next.push_back(c.empty() ? a : c + " " + a);
      commands = next;
    }
    for (const std::string& c : commands) {
      EXPECT_FALSE(out.count(c)) << "docs/cli.md's synopsis lists '" << c << "' twice";
      out[c] = flags;
    }
  }
  return out;
}

}  // namespace

TEST(CliHelp, EveryHelpListsExactlyTheParsersOptions) {
  const auto parser = crawleval::cli::parser_options();
  std::vector<std::string> commands;
  for (const auto& entry : parser) commands.push_back(entry.first);
  EXPECT_EQ(commands,
            (std::vector<std::string>{
                "bound", "convert", "fresh bound", "fresh generate", "fresh run", "generate",
                "import politecrawling", "index", "learn adaptive-whittle",
                "learn async-mirrorsync", "learn async-psgd", "learn lspe", "learn mirrorsync",
                "optimal", "plot", "relaxed", "run", "syncbandit generate", "syncbandit optimum"}));
  for (const auto& [command, options] : parser) {
    SCOPED_TRACE(command);
    const std::string help = output_of(std::string(CRAWLEVAL_BIN) + " " + command + " --help");
    std::vector<std::set<std::string>> listed, want;
    for (const std::string& o : help_options(help)) listed.push_back(split_names(o));
    for (const std::string& o : options) want.push_back(split_names(o));
    std::sort(listed.begin(), listed.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(listed, want) << help;
  }
}

TEST(CliHelp, DocumentedSynopsisNamesExactlyTheParsersOptions) {
  const auto parser = crawleval::cli::parser_options();
  const auto documented = documented_synopsis();
  for (const auto& [command, options] : parser) {
    SCOPED_TRACE(command);
    auto it = documented.find(command);
    ASSERT_NE(it, documented.end())
        << "docs/cli.md's synopsis has no 'crawleval " << command << "'";
    std::set<std::string> all_names;
    for (const std::string& o : options) {
      const std::set<std::string> names = split_names(o);
      all_names.insert(names.begin(), names.end());
      if (o[0] != '-') continue;  // a positional: the synopsis writes it in capitals
      bool named = false;
      for (const std::string& n : names) named = named || it->second.count(n);
      EXPECT_TRUE(named) << "docs/cli.md's synopsis of '" << command << "' lacks " << o;
    }
    for (const std::string& flag : it->second)
      EXPECT_TRUE(all_names.count(flag)) << "docs/cli.md's synopsis of '" << command << "' offers "
                                         << flag << ", which its parser does not take";
  }
  for (const auto& [command, flags] : documented)
    EXPECT_TRUE(parser.count(command))
        << "docs/cli.md's synopsis lists an unknown command '" << command << "'";
}

// The policies the docs list are the registry's (policy_registry.hpp), which --policy's help and
// its refusal are built from: docs/cli.md's synopsis names exactly them, in the registry's order,
// and docs/model.md and docs/python.md describe each.
TEST(CliHelp, DocumentedPoliciesAreTheRegistrys) {
  auto slurp = [](const std::string& name) {
    std::ifstream in(std::string(CRAWLEVAL_DOCS_DIR) + "/" + name);
    std::stringstream all;
    all << in.rdbuf();
    return all.str();
  };
  const std::string cli = slurp("cli.md");
  const std::size_t at = cli.find("[--policy ", cli.find("\n## Synopsis"));
  ASSERT_NE(at, std::string::npos) << "docs/cli.md's synopsis has no [--policy ...]";
  std::string listed;
  for (std::size_t i = at + 10; i < cli.size() && cli[i] != ']'; ++i)
    if (!std::isspace((unsigned char)cli[i])) listed += cli[i];
  EXPECT_EQ(listed, crawleval::policy_choices(","));
  const std::string model = slurp("model.md"), python = slurp("python.md");
  for (const crawleval::RegisteredPolicy& p : crawleval::policy_registry()) {
    const std::string quoted = std::string("`") + p.name + "`";
    EXPECT_NE(model.find(quoted), std::string::npos)
        << "docs/model.md does not describe " << quoted;
    if (p.score_function())
      EXPECT_NE(python.find("\"" + std::string(p.name) + "\""), std::string::npos)
          << "docs/python.md does not name \"" << p.name << "\"";
  }
  const std::string help = output_of(std::string(CRAWLEVAL_BIN) + " run --help");
  for (const crawleval::RegisteredPolicy& p : crawleval::policy_registry())
    EXPECT_NE(help.find(std::string(p.name) + ": " + p.description), std::string::npos) << help;
}
