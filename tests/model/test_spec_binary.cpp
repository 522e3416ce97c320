// The built binary on malformed and invalid run specs: exit status 2 and the key path on stderr,
// never a crash (interface.md, "Exit status").
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

struct Run {
  int status = -1;  // exit status, or -1 when the process did not exit normally (a crash)
  std::string err;
};

std::string quoted(const std::string& s) { return "'" + s + "'"; }

Run run_peakcast(const std::string& args) {
  const fs::path err_file = fs::temp_directory_path() / ("peakcast_spec_binary_" + std::to_string(::getpid()) + ".err");
  const std::string cmd = quoted(PEAKCAST_BINARY) + " " + args + " > /dev/null 2> " + quoted(err_file.string());
  const int raw = std::system(cmd.c_str());
  Run r;
  if (raw != -1 && WIFEXITED(raw)) r.status = WEXITSTATUS(raw);
  std::ifstream in(err_file);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  fs::remove(err_file);
  return r;
}

std::string spec_file(const std::string& name) { return std::string(PEAKCAST_SOURCE_DIR) + "/tests/data/specs/" + name; }

}  // namespace

TEST_CASE("peakcast predict rejects malformed spec files with exit status 2 and the key path", "[spec][binary][hostile]") {
  const struct {
    const char* file;
    const char* expect_in_stderr;
  } cases[] = {
      {"not_json.json", "not valid JSON"},
      {"empty.json", "empty"},
      {"top_level_array.json", "JSON object"},
      {"top_level_number.json", "JSON object"},
      {"null_where_number.json", "model.num_layers"},
      {"string_where_list.json", "model.recompute_modules"},
      {"unknown_tag.json", "model.recompute_modules[1]"},
      {"key_in_wrong_section.json", "train.micro_batch_size"},
      {"huge_number.json", "model.hidden_size"},
      {"huge_integer.json", "model.hidden_size"},
      {"negative_size.json", "model.tensor_model_parallel_size"},
      {"moe_act_without_grouped_gemm.json", "model.recompute_modules[1]"},
  };
  for (const auto& c : cases) {
    const Run r = run_peakcast("predict " + quoted(spec_file(c.file)));
    INFO(c.file << "\nstderr:\n"
                << r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find(c.expect_in_stderr) != std::string::npos);
  }
}

TEST_CASE("peakcast predict survives generated hostile files", "[spec][binary][hostile]") {
  const fs::path dir = fs::temp_directory_path() / ("peakcast_hostile_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name, std::ios::binary) << text;
    return (dir / name).string();
  };
  std::string garbage(10u << 20, 'x');
  for (std::size_t i = 0; i < garbage.size(); i += 13) garbage[i] = static_cast<char>((i * 7919) % 256);
  const std::string files[] = {
      write("deep.json", std::string(200000, '[') + std::string(200000, ']')),
      write("deep_model.json", "{\"model\": {\"recompute_modules\": " + std::string(100000, '{') + "}}"),
      write("garbage.bin", garbage),
      write("binary_zero.json", std::string("{\"model\": {\"x\0\": 1}}", 21)),
  };
  for (const auto& f : files) {
    const Run r = run_peakcast("predict " + quoted(f));
    INFO(f << "\nstderr:\n"
           << r.err.substr(0, 2000));
    CHECK(r.status == 2);
    CHECK_FALSE(r.err.empty());
  }
  fs::remove_all(dir);
}

TEST_CASE("peakcast predict --set names a bad key and exits 2", "[spec][binary]") {
  const Run r = run_peakcast("predict --set model.seq_lenght=8192");
  INFO(r.err);
  CHECK(r.status == 2);
  CHECK(r.err.find("model.seq_lenght") != std::string::npos);
  CHECK(r.err.find("model.seq_length") != std::string::npos);
  const Run t = run_peakcast("predict --set model.recompute_modules=core_attn");
  INFO(t.err);
  CHECK(t.status == 2);
  CHECK(t.err.find("model.recompute_modules") != std::string::npos);
}
