// Placeholder until the validate command lands; registers the subcommand so --help lists it.
#include <iostream>

#include "commands.hpp"

namespace peakcast::cli {

Runner add_validate_command(CLI::App& app) {
  app.add_subcommand("validate", "(not available yet)");
  return [] {
    std::cerr << "peakcast validate: not available in this build\n";
    return 1;
  };
}

}  // namespace peakcast::cli
