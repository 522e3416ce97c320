// Placeholder until the predict command lands; registers the subcommand so --help lists it.
#include <iostream>

#include "commands.hpp"

namespace peakcast::cli {

Runner add_predict_command(CLI::App& app) {
  app.add_subcommand("predict", "(not available yet)");
  return [] {
    std::cerr << "peakcast predict: not available in this build\n";
    return 1;
  };
}

}  // namespace peakcast::cli
