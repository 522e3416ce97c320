// Placeholder until the calibrate command lands; registers the subcommand so --help lists it.
#include <iostream>

#include "commands.hpp"

namespace peakcast::cli {

Runner add_calibrate_command(CLI::App& app) {
  app.add_subcommand("calibrate", "(not available yet)");
  return [] {
    std::cerr << "peakcast calibrate: not available in this build\n";
    return 1;
  };
}

}  // namespace peakcast::cli
