// peakcast import --from-megatron-args "ARGS" [--num-gpus N] [--gpu PRESET] [--mamba]
// peakcast import --golden-csv FILE --out FILE      (Megatron-LM functional-test golden memory)
// peakcast import --seed-tables --out FILE          (the seed study's H100 tables)
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "commands.hpp"
#include "input_file.hpp"
#include "peakcast/calibration/ingest.hpp"
#include "peakcast/calibration/megatron_args.hpp"

namespace peakcast::cli {

namespace {
struct ImportArgs {
  std::string megatron_args;
  std::string golden_csv;
  bool seed_tables = false;
  std::string out;
  int num_gpus = 8;
  std::string gpu = "h100-sxm-80gb";
  bool mamba = false;
};

int write_records(const std::vector<calibration::Record>& records, const std::string& path) {
  std::string lines;
  for (const auto& r : records) lines += calibration::to_json_line(r) + "\n";
  if (!write_output("--out", path, lines)) return kExitInvalidInput;
  std::cerr << "wrote " << records.size() << " records to " << path << "\n";
  return kExitOk;
}
}  // namespace

Runner add_import_command(CLI::App& app) {
  auto args = std::make_shared<ImportArgs>();
  CLI::App* sub = app.add_subcommand("import", "Turn Megatron-LM arguments or published measurements into run specs / records");
  sub->add_option("--from-megatron-args", args->megatron_args, "Megatron-LM command-line arguments (one string); prints the run spec");
  sub->add_option("--golden-csv", args->golden_csv, "megatron_functional_golden_memory.csv -> records (needs --out)");
  sub->add_flag("--seed-tables", args->seed_tables, "The seed study's H100 tables -> records (needs --out)");
  sub->add_option("--out", args->out, "Records file to write (JSON lines)");
  sub->add_option("--num-gpus", args->num_gpus, "World size for --from-megatron-args (default 8)");
  sub->add_option("--gpu", args->gpu, "GPU preset for --from-megatron-args (default h100-sxm-80gb)");
  sub->add_flag("--mamba", args->mamba, "The arguments are for pretrain_mamba.py");
  return [args] {
    const int modes = !args->megatron_args.empty() + !args->golden_csv.empty() + args->seed_tables;
    if (modes != 1) {
      std::cerr << "error: give exactly one of --from-megatron-args, --golden-csv, --seed-tables\n";
      return kExitInvalidInput;
    }
    if (!args->megatron_args.empty()) {
      calibration::ImportOptions opt{args->num_gpus, args->gpu, args->mamba};
      const auto r = calibration::import_megatron_args(calibration::split_command_line(args->megatron_args), opt);
      for (const auto& e : r.errors) std::cerr << "error: " << e << "\n";
      if (!r.errors.empty()) return kExitInvalidInput;
      for (const auto& n : r.notes) std::cerr << "note: " << n << "\n";
      for (const auto& i : r.ignored) std::cerr << "ignored (no memory effect modelled): " << i << "\n";
      std::cout << r.spec_json << "\n";
      return kExitOk;
    }
    if (args->out.empty()) {
      std::cerr << "error: --out FILE is required\n";
      return kExitInvalidInput;
    }
    if (args->seed_tables) return write_records(calibration::seed_h100_records(), args->out);
    const auto csv = read_input("--golden-csv", args->golden_csv, kMaxDataBytes);
    if (!csv) return kExitInvalidInput;
    const auto ingest = calibration::ingest_golden_memory_csv(*csv);
    for (const auto& s : ingest.skipped) std::cerr << "skipped " << s << "\n";
    std::cerr << ingest.rows << " rows, " << ingest.rows_with_value << " with a measured value, " << ingest.records.size()
              << " imported\n";
    return write_records(ingest.records, args->out);
  };
}

}  // namespace peakcast::cli
