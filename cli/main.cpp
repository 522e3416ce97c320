// peakcast: per-rank peak memory of Megatron Core training, before launch.
#include <exception>
#include <iostream>

#include "commands.hpp"
#include "terminal_filter.hpp"

int main(int argc, char** argv) {
  using namespace peakcast::cli;
  const PrintableStreams printable_streams;  // before anything is printed, CLI11's messages included
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
  add(add_allocator_replay_command);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // The same "error: ..." form as every other refusal, so scripts and users find it the same way.
    std::cerr << "error: " << e.what() << "\nRun with --help for more information.\n";
    return kExitInvalidInput;
  }
  try {
    for (auto& [sub, run] : runners) {
      if (sub->parsed()) return run();
    }
  } catch (const peakcast::SizeOverflow& e) {
    // Validation bounds the usual sizes (validate_magnitudes.cpp); a product it does not foresee still
    // stops here as an input error rather than a wrapped figure.
    std::cerr << "error: " << e.what() << " bytes or elements for this run: no GPU holds it; reduce the sizes "
              << "(seq_length, micro_batch_size, hidden or vocabulary sizes, layers) [size_out_of_range]\n";
    return kExitInvalidInput;
  } catch (const std::exception& e) {
    std::cerr << "peakcast: internal error: " << e.what() << "\n";
    return 1;
  }
  return 1;
}
