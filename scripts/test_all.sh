#!/usr/bin/env bash
# The whole test suite: a Release build and an AddressSanitizer + UndefinedBehaviorSanitizer build,
# each running every Catch2 test through ctest, mutation fuzzing of run specs on the sanitizer
# build, then the calibration error bounds.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh --test
jobs=$(nproc)
# Issue #25's house rules: no file over 500 lines, no function over 120 in model/, sim/, calibration/;
# the C++ formatted as .clang-format says.
python3 scripts/check_sizes.py
git ls-files -z '*.cpp' '*.hpp' | xargs -0 clang-format --dry-run --Werror
# The key classification (configs/schema/memory_effect.json, embedded: the unsimulated-key warnings) is what
# its generator makes of the typed parser as it stands, and no later stage reads a rules-only field.
python3 configs/schema/classify_memory_effect.py --check

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPEAKCAST_WERROR=ON >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

# The sanitizer builds compile at -O1 -g1 with assertions on: GCC 12 takes about 10 s a file there
# against 47 s at RelWithDebInfo's -O2 -g with UBSan (sim/src/simulator.cpp, measured on the 2-core CI
# machine's kind), which had the sanitizer build alone near half of CI's 90 minutes.
sanitizer_flags=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1")
# Without the unity build (CMakeLists.txt): every file compiles on its own, with only what it includes.
cmake -S . -B build-asan -G Ninja "${sanitizer_flags[@]}" -DPEAKCAST_UNITY_BUILD=OFF -DPEAKCAST_SANITIZE=ON -DPEAKCAST_BUILD_BENCHMARKS=OFF -DPEAKCAST_BUILD_PYTHON=OFF >/dev/null
cmake --build build-asan -j "$jobs"
# Every test but the planner's three brute-force comparisons (the same plan() and Predictor paths as the
# other planner tests, over a whole layout space: about 6 minutes under the sanitizers; they run above).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -E "objective equals brute force"
# Bad input never crashes: mutated inputs through the sanitizer build exit 0 or 2, nothing else, with no
# sanitizer report. The same cases run twice: under ASan+UBSan with a hang guard (120 s: the sanitizers
# slow this code about tenfold, a 1,024-layer rank takes 44 s there and 4.5 s in Release), and on the
# Release binary with issue #27's caps, 20 s and 2 GB a case.
sanitized() { ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$@"; }
fuzz_inputs=(
  "--cases 300 --seed 1 --commands predict,rank"                          # run spec JSON
  "--cases 300 --seed 2 --commands predict,rank --inputs yaml,recipe"     # Bridge run_config.yaml and recipe names
  "--cases 300 --seed 3 --commands predict,rank --inputs mlm"             # Megatron-LM launch lines (a misspelt option exits 2)
  "--cases 200 --seed 4 --commands predict --inputs hf"                   # Hugging Face config.json files
)
for f in "${fuzz_inputs[@]}"; do
  # shellcheck disable=SC2086
  sanitized python3 scripts/fuzz_specs.py --peakcast build-asan/cli/peakcast $f --max-seconds 120 --max-rss-gb 8
  # shellcheck disable=SC2086
  python3 scripts/fuzz_specs.py --peakcast build/cli/peakcast $f --max-seconds 20 --max-rss-gb 2
done
# The extremes scan of every schema field and the other input paths (sweep, rank, corpus records, golden CSV
# rows, output failures), in parallel: under the sanitizers (hang guard), then with the caps on Release.
sanitized python3 scripts/fuzz_fields.py --peakcast build-asan/cli/peakcast --jobs "$jobs" --seed 1 --max-seconds 120 --max-rss-gb 8
python3 scripts/fuzz_fields.py --peakcast build/cli/peakcast --jobs "$jobs" --seed 1 --max-seconds 20 --max-rss-gb 2
# The sweep's worker pool under ThreadSanitizer: only the binary, then a many-point sweep on every core.
cmake -S . -B build-tsan -G Ninja "${sanitizer_flags[@]}" -DPEAKCAST_SANITIZE_THREAD=ON -DPEAKCAST_BUILD_TESTS=OFF \
  -DPEAKCAST_BUILD_BENCHMARKS=OFF -DPEAKCAST_BUILD_PYTHON=OFF >/dev/null
cmake --build build-tsan -j "$jobs" --target peakcast
TSAN_OPTIONS=halt_on_error=1 build-tsan/cli/peakcast sweep --threads 8 --vary train.micro_batch_size=1,2 \
  --vary model.seq_length=2048,4096,8192 --vary 'model.recompute_modules=[],["core_attn"],["moe_act"]' >/dev/null
# rank's candidates run on every core too (one Predictor a thread).
TSAN_OPTIONS=halt_on_error=1 build-tsan/cli/peakcast rank configs/runs/moonlight-16b-8xh100.json --set model.num_layers=3 \
  --set 'model.moe_layer_freq=[0,1,1]' >/dev/null

if [ -x .ci/validate_bounds.sh ]; then .ci/validate_bounds.sh build/cli/peakcast; fi
