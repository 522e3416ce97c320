#pragma once
// What a Megatron-LM functional test passed, beyond the external-validation CSV's columns: the case's
// MODEL_ARGS and ENV_VARS (configs/functional_test_args.json) and its recipe's world size
// (configs/schema/functional_test_world_sizes.json), both extracted from NVIDIA/Megatron-LM at the
// CSV's commit d98e8a64 by the scripts under configs/schema/.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace peakcast::calibration::detail {

// The object `section` of the embedded configs/<name> (parsed once per process), or an empty object.
const nlohmann::json& embedded_section(const char* name, const char* section);

struct TestCaseArgs {
  std::vector<std::string> words;                        // MODEL_ARGS as the harness passes them
  std::vector<std::pair<std::string, std::string>> env;  // ENV_VARS, exported before the launch
  std::string source;                                    // model_config.yaml path and revision
};

// The case ("<model>/<test_case>") as configs/functional_test_args.json lists it, else nullopt.
std::optional<TestCaseArgs> functional_test_args(const std::string& case_key);

// The CSV columns (name -> cell) that disagree with the case's MODEL_ARGS / ENV_VARS, each as
// "column 'x' = 'a' but MODEL_ARGS gives 'b'"; empty when every non-empty column agrees.
std::vector<std::string> csv_disagreements(const TestCaseArgs& args, const std::map<std::string, std::string>& columns);

// The recipe's world size for "<model>/<test_case>/<env_platform>", with its source, when the
// table resolves one.
std::optional<std::pair<int, std::string>> recipe_world_size(const std::string& row_key);

}  // namespace peakcast::calibration::detail
