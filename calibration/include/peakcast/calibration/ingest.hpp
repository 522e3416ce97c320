#pragma once
// Published measurements turned into records: the seed study's H100 tables and the Megatron-LM
// functional tests' golden memory values.
#include <string>
#include <vector>

#include "peakcast/calibration/record.hpp"

namespace peakcast::calibration {

// Moonlight 16B (6 rows), Nemotron 3 Nano (6 rows), Llama 3 70B FP8 (4 rows) from
// /work/shared/seeds/nemo-mbridge-perf-activation-recompute.zh.md, each on its configs/runs/ spec.
std::vector<Record> seed_h100_records();

struct CsvIngest {
  std::vector<Record> records;
  std::vector<std::string> skipped;  // "model/test_case (platform): reason"
  int rows = 0;                      // data rows read
  int rows_with_value = 0;           // rows whose max_alloc_final_GB is a number
  // Usable rows: with a measured value, neither a resumed run (its optimizer state is loaded before
  // the first step, with checkpoint-loading buffers) nor a reinforcement-learning one (inference KV
  // cache). Coverage = usable_imported / usable.
  int usable = 0, usable_imported = 0;
};

// megatron_functional_golden_memory.csv: one record per mappable row; compared rank = last PP stage.
CsvIngest ingest_golden_memory_csv(const std::string& csv_text);

}  // namespace peakcast::calibration
