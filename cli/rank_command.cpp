// Placeholder until the rank command lands; registers the subcommand so --help lists it.
#include <iostream>

#include "commands.hpp"

namespace peakcast::cli {

Runner add_rank_command(CLI::App& app) {
  app.add_subcommand("rank", "(not available yet)");
  return [] {
    std::cerr << "peakcast rank: not available in this build\n";
    return 1;
  };
}

}  // namespace peakcast::cli
