#!/usr/bin/env bash
# The calibration issue's error bounds over the committed H200 measurements: median |error| of the
# whole-run peak at most 2 %, worst at most 5 %, both in-sample and 5-fold cross-validated.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/cli/peakcast}
"$bin" validate --max-median-error 0.02 --max-worst-error 0.05 > /tmp/peakcast_validate.txt
tail -20 /tmp/peakcast_validate.txt
"$bin" validate --cross-validate 5 --max-median-error 0.02 --max-worst-error 0.05 > /tmp/peakcast_validate_cv.txt
tail -20 /tmp/peakcast_validate_cv.txt
# Step time: every resolved pair of policies on the same run has its predicted overhead in the
# measured order (exit 1 otherwise).
"$bin" validate --time --corpus calibration/data/h200_timing.jsonl > /tmp/peakcast_validate_time.txt
tail -1 /tmp/peakcast_validate_time.txt
# Megatron-LM's own functional tests (issue #21): the committed import of the shared half
# (calibration/data/external_megatron.jsonl, `peakcast import --golden-csv`), resumed runs left out,
# pooled over every imported usable row: median |error| at most 5 %, 90th percentile at most 15 %, at
# least 90 % of rows within 10 %. Nothing is fitted on these rows (the TE stack's remainder is fitted on
# the H200 TE records, calibration/data/te_build/), so these are out-of-sample figures; `--cross-validate`
# would refit the fixed term on folds of this corpus instead, which is not what ships.
"$bin" validate --corpus calibration/data/external_megatron.jsonl --exclude-group -resume --pooled \
  --max-median-error 0.05 --max-p90-error 0.15 --min-within-10 0.90 > /tmp/peakcast_validate_functional.txt
tail -6 /tmp/peakcast_validate_functional.txt
