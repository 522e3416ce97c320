// Placeholder until the sweep command lands; registers the subcommand so --help lists it.
#include <iostream>

#include "commands.hpp"

namespace peakcast::cli {

Runner add_sweep_command(CLI::App& app) {
  app.add_subcommand("sweep", "(not available yet)");
  return [] {
    std::cerr << "peakcast sweep: not available in this build\n";
    return 1;
  };
}

}  // namespace peakcast::cli
