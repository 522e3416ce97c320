// The launch command: torchrun / python [-m torch.distributed.run|launch] options, the training
// script, and its arguments. Launcher options are skipped except the two that make the world size
// (--nnodes x --nproc-per-node); the script's name selects the model builder.
#include <algorithm>

#include "megatron_detail.hpp"

namespace peakcast::model::detail {

namespace {

// torchrun's own options (PyTorch torch/distributed/run.py get_args_parser, read at 010929fd; the
// same set torch.distributed.launch takes, plus its --use-env). Its parser keeps argparse's default
// allow_abbrev=True, so a unique prefix names an option too.
const std::vector<std::string>& torchrun_options() {
  static const std::vector<std::string> names = {
      "--nnodes", "--nproc-per-node", "--rdzv-backend", "--rdzv-endpoint", "--rdzv-id", "--rdzv-conf", "--standalone",
      "--max-restarts", "--monitor-interval", "--start-method", "--event-log-handler", "--role", "--module",
      "--no-python", "--run-path", "--log-dir", "--redirects", "--tee", "--local-ranks-filter", "--node-rank",
      "--master-addr", "--master-port", "--local-addr", "--logs-specs", "--numa-binding", "--signals-to-handle",
      "--use-env"};
  return names;
}
// The ones that take no value (action=check_env / store_true at run.py).
bool torchrun_flag(const std::string& name) {
  return name == "--standalone" || name == "--module" || name == "--no-python" || name == "--run-path" ||
         name == "--use-env";
}

// "--nproc_per_node" -> "--nproc-per-node"; "-m" -> "--module"; a unique prefix -> its option; else "".
std::string torchrun_name(std::string name) {
  if (name == "-m") return "--module";
  if (name == "-r") return "--redirects";
  if (name == "-t") return "--tee";
  if (name.rfind("--", 0) != 0) return "";
  std::replace(name.begin() + 2, name.end(), '_', '-');
  std::string match;
  for (const auto& o : torchrun_options()) {
    if (o == name) return o;
    if (o.rfind(name, 0) == 0) {
      if (!match.empty()) return "";  // ambiguous
      match = o;
    }
  }
  return match;
}

std::string env_value(const LaunchLine& line, const std::string& name) {
  std::string v;
  for (const auto& [k, val] : line.env)
    if (k == name) v = val;  // the last assignment wins
  return v;
}

// torchrun's world size: nodes (--nnodes N, or MIN:MAX with MIN == MAX) x --nproc-per-node (an
// integer; gpu/auto/cpu depend on the machine). Defaults "1:1" and "1" (run.py), or the PET_NNODES /
// PET_NPROC_PER_NODE environment variables its options read first.
void torchrun_world_size(LaunchLine& line, std::string nnodes, std::string nproc) {
  if (nnodes.empty()) nnodes = env_value(line, "PET_NNODES").empty() ? "1:1" : env_value(line, "PET_NNODES");
  if (nproc.empty()) nproc = env_value(line, "PET_NPROC_PER_NODE").empty() ? "1" : env_value(line, "PET_NPROC_PER_NODE");
  const auto colon = nnodes.find(':');
  const auto lo = python_int(nnodes.substr(0, colon));
  const auto hi = colon == std::string::npos ? lo : python_int(nnodes.substr(colon + 1));
  const auto per = python_int(nproc);
  if (lo && hi && *lo == *hi && per && *lo > 0 && *per > 0) {
    line.world_size = *lo * *per;
    line.world_size_from = line.launcher + " --nnodes " + nnodes + " --nproc-per-node " + nproc;
  } else {
    line.world_size_from = line.launcher + " --nnodes " + nnodes + " --nproc-per-node " + nproc +
                           " (not a fixed number of processes)";
  }
}

// torchrun-style options from words[k] on; returns the index of the training script.
std::optional<std::size_t> skip_torchrun_options(const std::vector<std::string>& words, std::size_t k, LaunchLine& line,
                                                 Diagnostics& out) {
  std::string nnodes, nproc;
  while (k < words.size() && words[k].size() > 1 && words[k][0] == '-') {
    if (words[k] == "--") {
      ++k;
      break;
    }
    const auto eq = words[k].find('=');
    const std::string written = words[k].substr(0, eq);
    const std::string name = torchrun_name(written);
    std::string value;
    if (name == "--module") {
      out.push_back({Severity::error, written, "launcher_module",
                     line.launcher + " -m runs a Python module; peakcast reads pretrain_gpt.py, pretrain_hybrid.py, "
                                     "pretrain_mamba.py, examples/bert/pretrain_bert.py or examples/t5/pretrain_t5.py launched as a script"});
      return std::nullopt;
    }
    if (!torchrun_flag(name)) {
      if (eq != std::string::npos) value = words[k].substr(eq + 1);
      else if (k + 1 < words.size()) value = words[++k];
    }
    if (name == "--nnodes") nnodes = value;
    else if (name == "--nproc-per-node") nproc = value;
    else line.ignored.push_back(line.launcher + " " + written + (value.empty() ? "" : " " + value) + " (launcher option)");
    ++k;
  }
  torchrun_world_size(line, nnodes, nproc);
  return k;
}

bool is_python_word(const std::string& w) {
  const auto slash = w.find_last_of('/');
  const std::string b = slash == std::string::npos ? w : w.substr(slash + 1);
  if (b.rfind("python", 0) != 0) return false;
  return std::all_of(b.begin() + 6, b.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

// python's own options before the script or -m (python -h: -c cmd, -m mod, -W arg, -X opt take a value).
std::optional<std::size_t> skip_python_options(const std::vector<std::string>& words, LaunchLine& line,
                                               Diagnostics& out) {
  std::size_t k = 1;
  line.launcher = "python";
  while (k < words.size() && words[k].size() > 1 && words[k][0] == '-') {
    const std::string& t = words[k];
    if (t == "-c" || t.rfind("-c", 0) == 0) {
      out.push_back({Severity::error, t, "launcher_command", "python -c runs a command string; give the training script"});
      return std::nullopt;
    }
    if (t == "-m" || t.rfind("-m", 0) == 0) {
      const std::string module = t == "-m" ? (k + 1 < words.size() ? words[k + 1] : "") : t.substr(2);
      k += t == "-m" ? 2 : 1;
      if (module == "torch.distributed.run" || module == "torch.distributed.launch") {
        line.launcher = "python -m " + module;
        return skip_torchrun_options(words, k, line, out);
      }
      out.push_back({Severity::error, "-m", "launcher_module",
                     "python -m " + module + ": peakcast knows the launchers torch.distributed.run and "
                                             "torch.distributed.launch, and the pretrain_*.py scripts"});
      return std::nullopt;
    }
    line.ignored.push_back("python " + t + ((t == "-W" || t == "-X") && k + 1 < words.size() ? " " + words[k + 1] : "") +
                           " (interpreter option)");
    k += (t == "-W" || t == "-X") ? 2 : 1;
  }
  return k;
}

// Without torchrun, Megatron-LM reads the world size from WORLD_SIZE (parse_args, arguments.py:144).
void world_size_from_env(LaunchLine& line) {
  if (const auto ws = python_int(env_value(line, "WORLD_SIZE")); ws && *ws > 0) {
    line.world_size = *ws;
    line.world_size_from = "WORLD_SIZE=" + env_value(line, "WORLD_SIZE") + " (read by parse_args, arguments.py:144)";
  }
}

// The training script: its name decides which model Megatron-LM builds.
bool take_script(const std::vector<std::string>& words, std::size_t k, LaunchLine& line, Diagnostics& out) {
  if (k >= words.size()) {
    out.push_back({Severity::error, "", "no_training_script",
                   line.launcher + " is given no training script; expected pretrain_gpt.py, pretrain_hybrid.py, "
                                   "pretrain_mamba.py, examples/bert/pretrain_bert.py or examples/t5/pretrain_t5.py"});
    return false;
  }
  const std::string& path = words[k];
  const auto slash = path.find_last_of('/');
  line.script = slash == std::string::npos ? path : path.substr(slash + 1);
  if (line.script != "pretrain_gpt.py" && line.script != "pretrain_hybrid.py" && line.script != "pretrain_mamba.py" &&
      line.script != "pretrain_bert.py" && line.script != "pretrain_t5.py") {
    const nlohmann::json& others = megatron_args_document()["other_scripts"];
    std::string why =
        "peakcast reads the arguments of pretrain_gpt.py, pretrain_hybrid.py, pretrain_mamba.py, "
        "examples/bert/pretrain_bert.py and examples/t5/pretrain_t5.py (Megatron-LM 24bad8e6)";
    for (const auto& [name, _] : others.items())
      if (line.script == name || (path.size() >= name.size() && path.compare(path.size() - name.size(), name.size(), name) == 0))
        why += "; " + name + " adds arguments of its own and builds another model";
    out.push_back({Severity::error, path, "unsupported_training_script", path + ": " + why});
    return false;
  }
  line.args.assign(words.begin() + static_cast<std::ptrdiff_t>(k) + 1, words.end());
  return true;
}

}  // namespace

bool read_launcher(const std::vector<std::string>& words, LaunchLine& line, Diagnostics& out) {
  const std::string& first = words.front();
  if (first.rfind("-", 0) == 0) {  // the arguments alone
    line.args = words;
    world_size_from_env(line);
    return true;
  }
  const auto slash = first.find_last_of('/');
  const std::string base = slash == std::string::npos ? first : first.substr(slash + 1);
  std::optional<std::size_t> script;
  if (base == "torchrun") {
    line.launcher = "torchrun";
    script = skip_torchrun_options(words, 1, line, out);
  } else if (is_python_word(first)) {
    script = skip_python_options(words, line, out);
  } else if (base.size() > 3 && base.compare(base.size() - 3, 3, ".py") == 0) {
    script = 0;
  } else {
    out.push_back({Severity::error, first, "unknown_launcher",
                   "'" + first + "' is not a launch command peakcast reads: expected torchrun, python[3] "
                                 "[-m torch.distributed.run], a pretrain_*.py script, or the Megatron-LM arguments alone"});
    return false;
  }
  if (!script || !take_script(words, *script, line, out)) return false;
  if (line.launcher.empty() || line.launcher == "python") world_size_from_env(line);
  return true;
}

}  // namespace peakcast::model::detail
