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
