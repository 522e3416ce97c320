#!/usr/bin/env python3
"""Write the checkpoint-region op lists that replay_bench runs (calibration/microbench/regions/).

Format of a region file (one op per line, '#' starts a comment; sizes are per rank):
  region <name>                    start a region (every op until the next 'region' belongs to it)
  gemm <m> <n> <k> <count>         count x  Y[m,n] = X[m,k] W[n,k]^T   (a Linear: m tokens, n out
                                   features, k in features), bf16 in/out, fp32 accumulate, cuBLASLt
  bmm <batch> <m> <n> <k> <count>  count x batched C_i[m,n] = A_i[m,k] B_i[k,n], bf16, fp32 accumulate
  softmax <rows> <cols>            row-wise softmax, bf16 in/out
  norm <rows> <cols>               RMSNorm (bf16 in/out, bf16 weight, fp32 rstd per row saved)
  swiglu <rows> <cols>             out[r,c] = silu(a[r,c]) * b[r,c]  (reads 2*rows*cols, writes rows*cols)
  elementwise <bytes_read> <bytes_written>   generic bandwidth-bound op (bf16 stream in/out)
  copy <bytes>                     device-to-device copy (permute/unpermute, GQA repeat, cat)

Shapes: s = sequence, b = micro-batch, T = s*b tokens, t = TP. Column-parallel GEMMs see T tokens
(sequence-parallel inputs are all-gathered); norms and residual adds under SP see T/t rows.
MoE expert token counts assume balanced routing: tokens per rank = T_in * topk * (experts per rank
/ experts) * EP, where T_in are the tokens one rank dispatches (T/t under SP). ETP = 1.
Mamba2's chunked scan (chunk 256) is written as its batched GEMMs (CB^T, diag, states, off-diag).
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))


class R:
    def __init__(self):
        self.lines = []

    def region(self, name, comment=""):
        self.lines.append(f"region {name}" + (f"   # {comment}" if comment else ""))

    def op(self, *a):
        self.lines.append(" ".join(str(int(x)) if not isinstance(x, str) else x for x in a))

    def text(self, header):
        return "\n".join([f"# {l}" for l in header.splitlines()] + self.lines) + "\n"


def attn_gqa_ops(r, T, s, b, np_, ng, d, h, with_proj=True, mask=True):
    """qkv GEMM, RoPE, GQA repeat, scores bmm, softmax, context bmm, proj."""
    if with_proj:
        r.op("gemm", T, (np_ + 2 * ng) * d, h, 1)
        r.op("elementwise", T * (np_ + ng) * d * 2, T * (np_ + ng) * d * 2)  # RoPE on q, k
    core_attn_ops(r, s, b, np_, ng, d, d)
    if with_proj:
        r.op("gemm", T, h, np_ * d, 1)


def core_attn_ops(r, s, b, np_, ng, dqk, dv):
    if ng and np_ // ng > 1:
        r.op("copy", 2 * s * b * np_ * dqk)  # repeat_interleave of K and V (bf16: 2 bytes)
    r.op("bmm", b * np_, s, s, dqk, 1)       # scores
    r.op("softmax", b * np_ * s, s)          # (mask + softmax, unfused, bf16)
    r.op("bmm", b * np_, s, dv, s, 1)        # context


def swiglu_mlp_ops(r, T, h, F, count=1, gated=True):
    r.op("gemm", T, (2 if gated else 1) * F, h, count)
    if gated:
        r.op("swiglu", T * count, F)
    else:
        r.op("elementwise", T * count * F * 2, T * count * F * 2)  # squared ReLU
    r.op("gemm", T, h, F, count)


def moe_ops(r, T_in, h, E, k, E_local, ep, F, shared_F=0, t=1, T_full=None, gated=True,
            act_region=None):
    """Router, permute, local experts, unpermute, shared expert."""
    r.op("gemm", T_in, E, h, 1)              # router logits
    r.op("softmax", T_in, E)
    routed = T_in * k * E_local // E * ep    # tokens this rank's experts process
    per_exp = max(1, routed // E_local)
    r.op("copy", routed * h * 2)             # permute
    swiglu_mlp_ops(r, per_exp, h, F, count=E_local, gated=gated)
    r.op("copy", routed * h * 2)             # unpermute
    r.op("elementwise", routed * h * 2, T_in * h * 2)  # weighted combine
    if shared_F:
        swiglu_mlp_ops(r, T_full or T_in, h, shared_F // t, gated=gated)
    return per_exp


def write(name, header, r):
    os.makedirs(os.path.join(HERE, "regions"), exist_ok=True)
    with open(os.path.join(HERE, "regions", name + ".txt"), "w") as f:
        f.write(r.text(header))


# ----------------------------------------------------------------------------------------------
def dense_gqa(name, h, F, H, G, d, s, b, t, sp, header):
    T = s * b
    T_sp = T // t if sp else T
    np_, ng = H // t, G // t
    r = R()
    r.region("layernorm")
    r.op("norm", T_sp, h)
    r.region("core_attn")
    core_attn_ops(r, s, b, np_, ng, d, d)
    r.region("mlp")
    swiglu_mlp_ops(r, T, h, F // t)
    r.region("layer", "one full transformer layer forward")
    r.op("norm", T_sp, h)
    attn_gqa_ops(r, T, s, b, np_, ng, d, h)
    r.op("elementwise", 2 * T_sp * h * 2, T_sp * h * 2)  # residual add
    r.op("norm", T_sp, h)
    swiglu_mlp_ops(r, T, h, F // t)
    r.op("elementwise", 2 * T_sp * h * 2, T_sp * h * 2)
    write(name, header, r)


def mla_moe(name, h, H, kv_lora, dqk, drope, dv, q_lora, s, b, t, sp, E, k, ep, F_moe,
            F_shared, F_dense, header, T_in_moe=None):
    T = s * b
    T_sp = T // t if sp else T
    np_ = H // t
    r = R()
    r.region("layernorm")
    r.op("norm", T_sp, h)
    r.region("mla_up_proj", "kv (and q) up-projections, RoPE, q/k concat")
    if q_lora:
        r.op("gemm", T, np_ * (dqk + drope), q_lora, 1)
    r.op("gemm", T, np_ * (dqk + dv), kv_lora, 1)
    r.op("elementwise", T * np_ * drope * 2 * 2, T * np_ * drope * 2 * 2)     # RoPE q, k
    r.op("copy", T * np_ * (dqk + drope) * 2 * 2)                              # cat q, k
    r.region("core_attn")
    core_attn_ops(r, s, b, np_, None, dqk + drope, dv)
    E_local = E // ep
    T_in = T_in_moe if T_in_moe is not None else T_sp
    r.region("moe", "router + permute + local experts + unpermute + shared expert")
    per_exp = moe_ops(r, T_in, h, E, k, E_local, ep, F_moe, F_shared, t=t, T_full=T)
    r.region("moe_act", "expert activation only (needs grouped GEMM / TE to be recomputed)")
    r.op("swiglu", per_exp * E_local, F_moe)
    r.region("shared_experts")
    swiglu_mlp_ops(r, T, h, F_shared // t)
    r.region("mlp", "dense first layer")
    swiglu_mlp_ops(r, T, h, F_dense // t)
    r.region("layer_moe", "one full MoE layer forward (MLA + MoE)")
    r.op("norm", T_sp, h)
    if q_lora:
        r.op("gemm", T, q_lora, h, 1)
        r.op("norm", T, q_lora)
    else:
        r.op("gemm", T, np_ * (dqk + drope), h, 1)
    r.op("gemm", T, kv_lora + drope, h, 1)
    r.op("norm", T, kv_lora)
    if q_lora:
        r.op("gemm", T, np_ * (dqk + drope), q_lora, 1)
    r.op("gemm", T, np_ * (dqk + dv), kv_lora, 1)
    r.op("elementwise", T * np_ * drope * 2 * 2, T * np_ * drope * 2 * 2)
    r.op("copy", T * np_ * (dqk + drope) * 2 * 2)
    core_attn_ops(r, s, b, np_, None, dqk + drope, dv)
    r.op("gemm", T, h, np_ * dv, 1)
    r.op("elementwise", 2 * T_sp * h * 2, T_sp * h * 2)
    r.op("norm", T_sp, h)
    moe_ops(r, T_in, h, E, k, E_local, ep, F_moe, F_shared, t=t, T_full=T)
    r.op("elementwise", 2 * T_sp * h * 2, T_sp * h * 2)
    write(name, header, r)


def mla_dense(name, h, H, kv_lora, dqk, drope, dv, q_lora, s, b, F, header):
    T = s * b
    np_ = H
    r = R()
    r.region("layernorm")
    r.op("norm", T, h)
    r.region("mla_up_proj")
    if q_lora:
        r.op("gemm", T, np_ * (dqk + drope), q_lora, 1)
    r.op("gemm", T, np_ * (dqk + dv), kv_lora, 1)
    r.op("elementwise", T * np_ * drope * 2 * 2, T * np_ * drope * 2 * 2)
    r.op("copy", T * np_ * (dqk + drope) * 2 * 2)
    r.region("core_attn")
    core_attn_ops(r, s, b, np_, None, dqk + drope, dv)
    r.region("mlp")
    swiglu_mlp_ops(r, T, h, F)
    write(name, header, r)


def moe_gqa(name, h, H, G, d, s, b, E, k, F_moe, F_shared, header):
    T = s * b
    r = R()
    r.region("layernorm")
    r.op("norm", T, h)
    r.region("core_attn")
    core_attn_ops(r, s, b, H, G, d, d)
    r.region("moe")
    per_exp = moe_ops(r, T, h, E, k, E, 1, F_moe, F_shared)
    r.region("moe_act")
    r.op("swiglu", per_exp * E, F_moe)
    if F_shared:
        r.region("shared_experts")
        swiglu_mlp_ops(r, T, h, F_shared)
    r.region("layer")
    r.op("norm", T, h)
    attn_gqa_ops(r, T, s, b, H, G, d, h)
    r.op("elementwise", 2 * T * h * 2, T * h * 2)
    r.op("norm", T, h)
    moe_ops(r, T, h, E, k, E, 1, F_moe, F_shared)
    r.op("elementwise", 2 * T * h * 2, T * h * 2)
    write(name, header, r)


def nemotron3_nano():
    h, H, G, d = 2688, 32, 2, 128
    s, b, t, ep = 8192, 1, 1, 8
    T = s * b
    d_inner, mh, state, groups, chunk = 4096, 64, 128, 8, 256
    hd = d_inner // mh
    E, k, F_moe, F_shared = 128, 6, 1856, 3712
    r = R()
    r.region("layernorm")
    r.op("norm", T, h)
    r.region("mamba_mixer", "Mamba2 mixer forward: in_proj, conv1d, chunked SSD scan, gated norm, out_proj")
    conv_dim = d_inner + 2 * groups * state
    r.op("gemm", T, 2 * d_inner + 2 * groups * state + mh, h, 1)
    r.op("elementwise", T * conv_dim * 2, T * conv_dim * 2)                # causal conv1d + SiLU
    nc = T // chunk
    r.op("bmm", nc * groups, chunk, chunk, state, 1)                       # C B^T per chunk
    r.op("bmm", nc * mh, chunk, hd, chunk, 1)                              # intra-chunk y
    r.op("bmm", nc * mh, state, hd, chunk, 1)                              # chunk states
    r.op("bmm", nc * mh, chunk, hd, state, 1)                              # inter-chunk y
    r.op("norm", T, d_inner)                                               # gated RMSNorm
    r.op("gemm", T, h, d_inner, 1)
    r.region("core_attn")
    core_attn_ops(r, s, b, H // t, G // t, d, d)
    r.region("moe", "squared-ReLU experts (not gated) + shared expert")
    E_local = E // ep
    per_exp = moe_ops(r, T, h, E, k, E_local, ep, F_moe, F_shared, T_full=T, gated=False)
    r.region("moe_act")
    r.op("elementwise", per_exp * E_local * F_moe * 2, per_exp * E_local * F_moe * 2)
    r.region("shared_experts")
    swiglu_mlp_ops(r, T, h, F_shared, gated=False)
    r.region("layer_attention")
    r.op("norm", T, h)
    attn_gqa_ops(r, T, s, b, H, G, d, h)
    r.op("elementwise", 2 * T * h * 2, T * h * 2)
    write("nemotron3_nano_ep8_tp1_seq8192", "Nemotron 3 Nano (h 2688, 32 heads / 2 KV groups, Mamba2 "
          "d_inner 4096 64 heads state 128 8 groups,\n128 experts top-6 moe_ffn 1856 squared-ReLU, "
          "shared 3712), EP8 TP1, seq 8192, mbs 1, per rank", r)


def main():
    mla_moe("moonlight16b_tp2sp_ep8_seq4096", h=2048, H=16, kv_lora=512, dqk=128, drope=64, dv=128,
            q_lora=None, s=4096, b=1, t=2, sp=True, E=64, k=6, ep=8, F_moe=1408, F_shared=2816,
            F_dense=11264,
            header="Moonlight 16B per rank on TP2(+SP)/EP8, seq 4096, mbs 1: h 2048, 16 heads / TP = 8,"
                   "\nMLA kv_lora 512, qk 128 + 64 rope, v 128, no q_lora; 64 experts / EP8 = 8 local,"
                   "\nmoe_ffn 1408, top-6, shared 2816 / TP; dense layer F 11264 / TP. ETP 1.")
    nemotron3_nano()
    dense_gqa("llama3_70b_tp4sp_seq4096", h=8192, F=28672, H=64, G=8, d=128, s=4096, b=1, t=4,
              sp=True, header="Llama 3 70B per rank on TP4 + SP, seq 4096, mbs 1")
    # the corpus models (calibration/harness/make_corpus.py), one GPU, seq 4096, mbs 1
    dense_gqa("corpus_gqa8b_seq4096", 4096, 14336, 32, 8, 128, 4096, 1, 1, False,
              "corpus model gqa8b (Llama-3-8B width), TP1, seq 4096, mbs 1")
    dense_gqa("corpus_gqa8b_tp2sp_seq4096", 4096, 14336, 32, 8, 128, 4096, 1, 2, True,
              "corpus model gqa8b on TP2 + SP, seq 4096, mbs 1, per rank")
    for s in (2048, 4096, 8192):
        dense_gqa(f"corpus_gqa2b_seq{s}", 2048, 8192, 16, 4, 128, s, 1, 1, False,
                  f"corpus model gqa2b, TP1, seq {s}, mbs 1")
    mla_dense("corpus_mla_noq_seq4096", 2048, 16, 512, 128, 64, 128, None, 4096, 1, 11264,
              "corpus model mla_noq (Moonlight attention, dense FFN 11264), seq 4096")
    mla_dense("corpus_mla_q_seq4096", 2048, 16, 512, 128, 64, 128, 1536, 4096, 1, 11264,
              "corpus model mla_q (q_lora 1536), seq 4096")
    mla_moe("corpus_moonlight4_seq4096", h=2048, H=16, kv_lora=512, dqk=128, drope=64, dv=128,
            q_lora=None, s=4096, b=1, t=1, sp=False, E=64, k=6, ep=1, F_moe=1408, F_shared=2816,
            F_dense=11264, header="corpus model moonlight4 on one GPU (EP1), seq 4096")
    moe_gqa("corpus_moe_gqa_shared_seq4096", 2048, 16, 4, 128, 4096, 1, 16, 4, 2048, 4096,
            "corpus model moe_gqa_shared (16 experts top-4, shared 4096), seq 4096")
    moe_gqa("corpus_moe_gqa_seq4096", 2048, 16, 4, 128, 4096, 1, 16, 4, 2048, 0,
            "corpus model moe_gqa (16 experts top-4, no shared), seq 4096")


if __name__ == "__main__":
    main()
    print("written:", sorted(os.listdir(os.path.join(HERE, "regions"))))
