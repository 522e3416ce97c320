// peakcast import --from-megatron-args "LINE" [--num-gpus N] [--gpu PRESET]   (a Megatron-LM launch line)
// peakcast import --golden-csv FILE --out FILE      (Megatron-LM functional-test golden memory)
// peakcast import --seed-tables --out FILE          (the seed study's H100 tables)
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "commands.hpp"
#include "input_file.hpp"
#include "peakcast/calibration/ingest.hpp"
#include "peakcast/model/megatron_args.hpp"
#include "peakcast/model/validate.hpp"

namespace peakcast::cli {

namespace {
struct ImportArgs {
  std::string megatron_args;
  std::string golden_csv;
  bool seed_tables = false;
  std::string out;
  std::optional<std::int64_t> num_gpus;
  std::optional<std::string> gpu;
};

// The launch line -> the run spec on stdout; its diagnostics, what was derived and what was ignored on
// stderr. The spec is parsed and validated as predict would read it: an error exits 2.
int import_line(const ImportArgs& args) {
  model::MegatronLineOptions opt;
  opt.num_gpus = args.num_gpus;
  opt.gpu = args.gpu;
  const model::ParseResult parsed = model::parse_megatron_line(args.megatron_args, {}, opt);
  model::Diagnostics all = parsed.diagnostics;
  if (parsed.spec) {
    const model::Diagnostics v = model::validate(*parsed.spec);
    all.insert(all.end(), v.begin(), v.end());
  }
  for (const auto& d : all) std::cerr << model::format(d) << "\n";
  if (!parsed.spec || model::has_errors(all)) return kExitInvalidInput;
  const model::MegatronLineImport imp = model::import_megatron_line(args.megatron_args, opt);
  for (const auto& n : imp.notes) std::cerr << "note: " << n << "\n";
  for (const auto& i : imp.ignored) std::cerr << "ignored: " << i << "\n";
  std::cout << imp.spec_json << "\n";
  return kExitOk;
}

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
  sub->add_option("--from-megatron-args", args->megatron_args,
                  "A Megatron-LM launch line: [VAR=value ...] [torchrun OPTS | python -m torch.distributed.run OPTS] "
                  "pretrain_gpt.py|pretrain_hybrid.py|pretrain_mamba.py|examples/bert/pretrain_bert.py|examples/t5/pretrain_t5.py ARGS, or ARGS alone; prints the run spec");
  sub->add_option("--golden-csv", args->golden_csv, "megatron_functional_golden_memory.csv -> records (needs --out)");
  sub->add_flag("--seed-tables", args->seed_tables, "The seed study's H100 tables -> records (needs --out)");
  sub->add_option("--out", args->out, "Records file to write (JSON lines)");
  sub->add_option("--num-gpus", args->num_gpus,
                  "World size for --from-megatron-args (required unless torchrun --nnodes x --nproc-per-node or WORLD_SIZE= gives it)");
  sub->add_option("--gpu", args->gpu, "GPU preset for --from-megatron-args (required: a line does not name it)");
  return [args] {
    const int modes = !args->megatron_args.empty() + !args->golden_csv.empty() + args->seed_tables;
    if (modes != 1) {
      std::cerr << "error: give exactly one of --from-megatron-args, --golden-csv, --seed-tables\n";
      return kExitInvalidInput;
    }
    if (!args->megatron_args.empty()) return import_line(*args);
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
    std::fprintf(stderr, "coverage: %d of %d usable rows imported (%.1f %%; usable: a measured value, not a resumed or RL run)\n",
                 ingest.usable_imported, ingest.usable, ingest.usable ? 100.0 * ingest.usable_imported / ingest.usable : 0.0);
    return write_records(ingest.records, args->out);
  };
}

}  // namespace peakcast::cli
