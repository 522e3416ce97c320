// peakcast: per-rank peak memory of Megatron Core training, before launch.
#include <exception>
#include <iostream>

#include "commands.hpp"

int main(int argc, char** argv) {
  using namespace peakcast::cli;
  CLI::App app{"peakcast: per-rank peak memory and recompute cost of Megatron Core training"};
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, Runner>> runners;
  const auto add = [&](Runner (*make)(CLI::App&)) {
    const std::size_t before = app.get_subcommands({}).size();
    Runner r = make(app);
    runners.emplace_back(app.get_subcommands({}).at(before), std::move(r));
  };
  add(add_predict_command);
  add(add_rank_command);
  add(add_sweep_command);
  add(add_calibrate_command);
  add(add_validate_command);
  add(add_import_command);
  add(add_recipes_command);
  add(add_plan_command);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kExitInvalidInput;
  }
  try {
    for (auto& [sub, run] : runners) {
      if (sub->parsed()) return run();
    }
  } catch (const std::exception& e) {
    std::cerr << "peakcast: internal error: " << e.what() << "\n";
    return 1;
  }
  return 1;
}
