#include "cmd/cli_words.h"

#include <algorithm>

namespace gpuledger::cmd {
namespace {

// Edits between a and b, a swap of two neighbours counting as one (optimal string alignment):
// "audti" is one slip from "audit", as "reprot" is from "report".
std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string Joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

std::string Hint(std::string_view word, const std::vector<std::string>& candidates,
                 const char* quote) {
  const std::string near = Nearest(word, candidates);
  return near.empty() ? "" : std::string("; did you mean ") + quote + near + quote + "?";
}

}  // namespace

std::string Nearest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(1, word.size() / 3) + 1;
  for (const std::string& c : candidates) {
    const std::size_t d = EditDistance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

std::string UnknownWord(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* current = &app;
  std::size_t i = 0;
  // Commands first: each word that is not an option names a subcommand while there are some.
  while (i < args.size() && !args[i].starts_with("-")) {
    const auto subs = current->get_subcommands([](const CLI::App*) { return true; });
    if (subs.empty()) break;  // a positional argument of a leaf command
    const auto it = std::find_if(subs.begin(), subs.end(),
                                 [&](const CLI::App* s) { return s->get_name() == args[i]; });
    if (it == subs.end()) {
      std::vector<std::string> names;
      for (const CLI::App* s : subs) names.push_back(s->get_name());
      const std::string where = current == &app ? "" : " of '" + current->get_name() + "'";
      return "unknown command '" + args[i] + "'" + where + Hint(args[i], names, "'") +
             " (commands: " + Joined(names) + ")";
    }
    current = *it;
    ++i;
  }
  for (; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") break;  // what follows is not options
    if (!word.starts_with("--")) continue;
    const std::string name = word.substr(0, word.find('='));
    if (current->get_option_no_throw(name) != nullptr || app.get_option_no_throw(name) != nullptr)
      continue;
    std::vector<std::string> names;
    for (const CLI::Option* o : current->get_options())
      for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    return "unknown option " + name + " for '" + current->get_name() + "'" + Hint(name, names, "");
  }
  return "";
}

}  // namespace gpuledger::cmd
