#!/bin/bash
# Session 28 device call (issue #22): allocator event streams (alloc_trace.py) of eleven corpus cases whose replayed
# reservation is among the furthest from the measured one and that fit an 80 GB card, the held-out streams for the
# allocator's address rule as refit on 27 streams (kTopDownSegmentBytes = 128 MiB), and REPEATS (5) more runs of
# layout_fake_ep8_moonlight4_moe_r0 for its run-to-run spread. Predictions first: calibration/data/predictions/s28_traces.md.
# The same steps as session 27's call with other cases: run from the checkout's root with .megatron carried.
export NAMES=${NAMES:-fam_gelu_core_attn_mlp,variants_learned_absolute,mtprep_gqa2b_2_repeated_core_attn,fam_gpt3_sel_empty,variants_mtp1_core_attn,layout_fake_pp2_vpp2_gqa8b_none_r0,fam_gpt3_full_uniform_1,etp_tp2sp_etp2_ep2_allgather_mbs2_r0,etp_tp2sp_etp2_ep1_r0,fam_fp16_core_attn,fam_gpt3_core_attn}
export REPEATS=${REPEATS:-5}
exec bash "$(dirname "$0")/device_s27_traces.sh"
