// replay_bench: time the forward ops of activation-checkpoint regions at real per-rank shapes.
//
//   replay_bench [--reps N] [--warmup N] REGIONS.txt [REGIONS.txt ...] > out.json
//
// Region file format: see make_regions.py (one op per line: region/gemm/bmm/softmax/norm/swiglu/
// elementwise/copy). Every op gets its own freshly cudaMalloc'd outputs (their bytes are the
// region's alloc_bytes, plus the cuBLASLt workspace once per region that has GEMMs) and inputs
// filled by a random kernel (never zeros). Inputs of ops whose working set is below 4x L2 are
// replicated and rotated across repetitions so each repetition reads cold data.
// Timing: warm-up, then N repetitions (default 25) each bracketed by CUDA events; median, p10, p90.
// Region time: the whole op sequence of the region, same method.
// Ceilings: one 8192^3 bf16 GEMM (TFLOP/s) and a 4 GiB device-to-device copy (GB/s, read+write).
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "replay_kernels.cuh"

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #x, __FILE__, __LINE__,                  \
              cudaGetErrorString(e_));                                                          \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)
#define CKL(x)                                                                                  \
  do {                                                                                          \
    cublasStatus_t s_ = (x);                                                                    \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                          \
      fprintf(stderr, "cuBLAS error %d at %s:%d\n", (int)s_, __FILE__, __LINE__);              \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

static const size_t kWorkspace = 32ull << 20;  // cuBLASLt workspace (torch's default on Hopper)

// ------------------------------------------------------------------------------------------
struct Ctx {
  cublasLtHandle_t lt;
  void* ws;
  cudaStream_t st;
  size_t l2;
  int sms;
  std::vector<void*> allocs;
};

static void* dmalloc(Ctx& c, size_t bytes) {
  void* p = nullptr;
  CK(cudaMalloc(&p, std::max<size_t>(bytes, 256)));
  c.allocs.push_back(p);
  return p;
}
static bf16* drand(Ctx& c, size_t n, uint64_t seed) {
  bf16* p = (bf16*)dmalloc(c, n * sizeof(bf16));
  fill_random<<<4 * c.sms, 256, 0, c.st>>>(p, n, seed);
  CK(cudaGetLastError());
  return p;
}

struct Op {
  std::string kind, shape, region;
  std::vector<long long> a;
  double flops = 0, bytes = 0;
  size_t out_bytes = 0;
  int nbuf = 1;
  // buffers: per rotation set, inputs; outputs shared
  std::vector<std::vector<bf16*>> ins;
  std::vector<bf16*> outs;
  float* rstd = nullptr;
  // cublasLt
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo;
  bool has_algo = false;
  std::vector<float> times;
};

static void setup_gemm(Ctx& c, Op& op, long long M, long long N, long long K, long long batch,
                       bool weightT) {
  // column-major: C[M x N] = op(A) * B;  weightT: A stored [K x M] (transposed), B [K x N]
  CKL(cublasLtMatmulDescCreate(&op.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = weightT ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
  CKL(cublasLtMatmulDescSetAttribute(op.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  CKL(cublasLtMatmulDescSetAttribute(op.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  if (weightT)
    CKL(cublasLtMatrixLayoutCreate(&op.la, CUDA_R_16BF, K, M, K));
  else
    CKL(cublasLtMatrixLayoutCreate(&op.la, CUDA_R_16BF, M, K, M));
  CKL(cublasLtMatrixLayoutCreate(&op.lb, CUDA_R_16BF, K, N, K));
  CKL(cublasLtMatrixLayoutCreate(&op.lc, CUDA_R_16BF, M, N, M));
  if (batch > 1) {
    int32_t bc = (int32_t)batch;
    int64_t sa = M * K, sb = K * N, sc = M * N;
    CKL(cublasLtMatrixLayoutSetAttribute(op.la, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof(bc)));
    CKL(cublasLtMatrixLayoutSetAttribute(op.lb, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof(bc)));
    CKL(cublasLtMatrixLayoutSetAttribute(op.lc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof(bc)));
    CKL(cublasLtMatrixLayoutSetAttribute(op.la, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sa, sizeof(sa)));
    CKL(cublasLtMatrixLayoutSetAttribute(op.lb, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sb, sizeof(sb)));
    CKL(cublasLtMatrixLayoutSetAttribute(op.lc, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sc, sizeof(sc)));
  }
  cublasLtMatmulPreference_t pref;
  CKL(cublasLtMatmulPreferenceCreate(&pref));
  size_t ws = kWorkspace;
  CKL(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                           sizeof(ws)));
  cublasLtMatmulHeuristicResult_t res;
  int n = 0;
  CKL(cublasLtMatmulAlgoGetHeuristic(c.lt, op.desc, op.la, op.lb, op.lc, op.lc, pref, 1, &res, &n));
  cublasLtMatmulPreferenceDestroy(pref);
  if (n > 0) {
    op.algo = res.algo;
    op.has_algo = true;
  }
}

static void run_gemm(Ctx& c, Op& op, const bf16* A, const bf16* B, bf16* C) {
  float alpha = 1.f, beta = 0.f;
  CKL(cublasLtMatmul(c.lt, op.desc, &alpha, A, op.la, B, op.lb, &beta, C, op.lc, C, op.lc,
                     op.has_algo ? &op.algo : nullptr, c.ws, kWorkspace, c.st));
}

// inputs per op: list of element counts; outputs: list of element counts
static void prepare(Ctx& c, Op& op, const std::vector<size_t>& in_elems,
                    const std::vector<size_t>& out_elems, uint64_t& seed) {
  size_t in_bytes = 0;
  for (auto e : in_elems) in_bytes += e * 2;
  op.nbuf = 1;
  if (in_bytes < 4 * c.l2) op.nbuf = (int)std::min<size_t>(16, (4 * c.l2) / std::max<size_t>(in_bytes, 1) + 1);
  op.ins.resize(op.nbuf);
  for (int r = 0; r < op.nbuf; ++r)
    for (auto e : in_elems) op.ins[r].push_back(drand(c, e, seed++));
  for (auto e : out_elems) {
    op.outs.push_back((bf16*)dmalloc(c, e * 2));
    op.out_bytes += e * 2;
  }
}

static void launch(Ctx& c, Op& op, int rep) {
  auto& in = op.ins[rep % op.nbuf];
  const auto& a = op.a;
  if (op.kind == "gemm") {
    long long m = a[0], n = a[1], k = a[2], cnt = a[3];
    for (long long i = 0; i < cnt; ++i)  // weight W[n,k] (A, transposed), X[m,k] (B), Y (C)
      run_gemm(c, op, in[2 * i], in[2 * i + 1], op.outs[i]);
  } else if (op.kind == "bmm") {
    long long cnt = a[4];
    for (long long i = 0; i < cnt; ++i) run_gemm(c, op, in[2 * i], in[2 * i + 1], op.outs[i]);
  } else if (op.kind == "softmax") {
    long long rows = a[0], cols = a[1];
    int threads = cols >= 4096 ? 512 : (cols >= 512 ? 256 : 64);
    int per = (int)((cols + threads - 1) / threads);
    size_t sh = 34 * sizeof(float);
    if (per <= 1) softmax_rows<1><<<rows, threads, sh, c.st>>>(in[0], op.outs[0], cols);
    else if (per <= 4) softmax_rows<4><<<rows, threads, sh, c.st>>>(in[0], op.outs[0], cols);
    else if (per <= 8) softmax_rows<8><<<rows, threads, sh, c.st>>>(in[0], op.outs[0], cols);
    else if (per <= 16) softmax_rows<16><<<rows, threads, sh, c.st>>>(in[0], op.outs[0], cols);
    else softmax_rows<32><<<rows, threads, sh, c.st>>>(in[0], op.outs[0], cols);
  } else if (op.kind == "norm") {
    long long rows = a[0], cols = a[1];
    rmsnorm_rows<<<rows, 256, 0, c.st>>>(in[0], in[1], op.outs[0], op.rstd, cols);
  } else if (op.kind == "swiglu") {
    size_t n = (size_t)a[0] * a[1];
    swiglu_k<<<8 * c.sms, 256, 0, c.st>>>(in[0], in[1], op.outs[0], n);
  } else if (op.kind == "elementwise") {
    elementwise_k<<<8 * c.sms, 256, 0, c.st>>>(in[0], op.outs[0], a[0] / 2, a[1] / 2);
  } else if (op.kind == "copy") {
    CK(cudaMemcpyAsync(op.outs[0], in[0], a[0], cudaMemcpyDeviceToDevice, c.st));
  }
}

static Op make_op(Ctx& c, const std::string& region, const std::string& kind,
                  const std::vector<long long>& a, uint64_t& seed) {
  Op op;
  op.region = region;
  op.kind = kind;
  op.a = a;
  std::ostringstream sh;
  for (size_t i = 0; i < a.size(); ++i) sh << (i ? "x" : "") << a[i];
  op.shape = sh.str();
  if (kind == "gemm") {
    long long m = a[0], n = a[1], k = a[2], cnt = a[3];
    setup_gemm(c, op, n, m, k, 1, true);
    std::vector<size_t> in, out;
    for (long long i = 0; i < cnt; ++i) { in.push_back(n * k); in.push_back(m * k); out.push_back(m * n); }
    prepare(c, op, in, out, seed);
    op.flops = 2.0 * m * n * k * cnt;
    op.bytes = 2.0 * (m * k + n * k + m * n) * cnt;
  } else if (kind == "bmm") {
    long long bt = a[0], m = a[1], n = a[2], k = a[3], cnt = a[4];
    // row-major C[m,n] = A[m,k] B[k,n]  ==  col-major C^T[n,m] = B^T[n,k] A^T[k,m]
    setup_gemm(c, op, n, m, k, bt, false);
    std::vector<size_t> in, out;
    for (long long i = 0; i < cnt; ++i) { in.push_back(bt * k * n); in.push_back(bt * m * k); out.push_back(bt * m * n); }
    prepare(c, op, in, out, seed);
    op.flops = 2.0 * bt * m * n * k * cnt;
    op.bytes = 2.0 * bt * (m * k + k * n + m * n) * cnt;
  } else if (kind == "softmax") {
    size_t n = (size_t)a[0] * a[1];
    if (a[1] > 32 * 512) { fprintf(stderr, "softmax cols > 16384 unsupported\n"); exit(2); }
    prepare(c, op, {n}, {n}, seed);
    op.bytes = 4.0 * n;
  } else if (kind == "norm") {
    size_t n = (size_t)a[0] * a[1];
    prepare(c, op, {n, (size_t)a[1]}, {n}, seed);
    op.rstd = (float*)dmalloc(c, a[0] * 4);
    op.out_bytes += a[0] * 4;
    op.bytes = 4.0 * n + 2.0 * a[1] + 4.0 * a[0];
  } else if (kind == "swiglu") {
    size_t n = (size_t)a[0] * a[1];
    prepare(c, op, {n, n}, {n}, seed);
    op.bytes = 6.0 * n;
  } else if (kind == "elementwise") {
    prepare(c, op, {(size_t)std::max<long long>(a[0] / 2, 1)}, {(size_t)std::max<long long>(a[1] / 2, 1)}, seed);
    op.bytes = (double)a[0] + a[1];
  } else if (kind == "copy") {
    prepare(c, op, {(size_t)a[0] / 2}, {(size_t)a[0] / 2}, seed);
    op.bytes = 2.0 * a[0];
  } else {
    fprintf(stderr, "unknown op %s\n", kind.c_str());
    exit(2);
  }
  return op;
}

static std::vector<float> time_fn(Ctx& c, int warm, int reps, const std::function<void(int)>& f) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < warm; ++i) f(i);
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    CK(cudaEventRecord(e0, c.st));
    f(warm + i);
    CK(cudaEventRecord(e1, c.st));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms * 1e-3f);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(t.begin(), t.end());
  return t;
}
static double pct(const std::vector<float>& t, double p) {
  size_t i = (size_t)std::min<double>(t.size() - 1, std::floor(p * (t.size() - 1) + 0.5));
  return t[i];
}

static std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\';
    if ((unsigned char)ch < 0x20) continue;
    o += ch;
  }
  return o + "\"";
}

static void free_all(Ctx& c) {
  for (void* p : c.allocs) cudaFree(p);
  c.allocs.clear();
}


using Regions = std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::vector<long long>>>>>;

// A region file: "region NAME" lines, then one op per line (kind and integer arguments); '#' comments.
static Regions parse_regions(std::ifstream& in) {
  Regions regions;
  std::string line;
  while (std::getline(in, line)) {
    auto h = line.find('#');
    if (h != std::string::npos) line = line.substr(0, h);
    std::istringstream ls(line);
    std::string kw;
    if (!(ls >> kw)) continue;
    if (kw == "region") {
      std::string name;
      ls >> name;
      regions.push_back({name, {}});
      continue;
    }
    std::vector<long long> a;
    long long v;
    while (ls >> v) a.push_back(v);
    if (regions.empty()) regions.push_back({"unnamed", {}});
    regions.back().second.push_back({kw, a});
  }
  return regions;
}

struct Ceilings {
  double gemm_tflops = 0, copy_gbps = 0;
};

// One 8192^3 bf16 GEMM and a 4 GiB device-to-device copy.
static Ceilings measure_ceilings(Ctx& c, uint64_t& seed) {
  Ceilings out;
  Op g = make_op(c, "ceiling", "gemm", {8192, 8192, 8192, 1}, seed);
  auto t = time_fn(c, 3, 20, [&](int r) { launch(c, g, r); });
  out.gemm_tflops = g.flops / pct(t, 0.5) / 1e12;
  size_t bytes = 4ull << 30;
  void *a = dmalloc(c, bytes), *b = dmalloc(c, bytes);
  fill_random<<<4 * c.sms, 256, 0, c.st>>>((bf16*)a, bytes / 2, seed++);
  auto t2 = time_fn(c, 3, 20, [&](int) { CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, c.st)); });
  out.copy_gbps = 2.0 * bytes / pct(t2, 0.5) / 1e9;
  free_all(c);
  return out;
}

struct JsonLists {
  std::ostringstream ops, regions;
  bool first_op = true, first_region = true;
};

// Times every op of one region, then the region's whole sequence; appends both to the JSON lists.
static void bench_region(Ctx& c, const std::string& rname, const std::vector<std::pair<std::string, std::vector<long long>>>& spec,
                         int warm, int reps, uint64_t& seed, JsonLists& js) {
  std::vector<Op> ops;
  size_t alloc = 0;
  bool has_gemm = false;
  for (auto& o : spec) {
    ops.push_back(make_op(c, rname, o.first, o.second, seed));
    alloc += ops.back().out_bytes;
    has_gemm |= (o.first == "gemm" || o.first == "bmm");
  }
  CK(cudaStreamSynchronize(c.st));
  for (auto& op : ops) {
    auto t = time_fn(c, warm, reps, [&](int r) { launch(c, op, r); });
    js.ops << (js.first_op ? "" : ",\n") << "  {\"region\":" << json_str(rname) << ",\"kind\":" << json_str(op.kind)
           << ",\"shape\":" << json_str(op.shape) << ",\"flops\":" << op.flops << ",\"bytes\":" << op.bytes
           << ",\"out_bytes\":" << op.out_bytes << ",\"rotating_input_sets\":" << op.nbuf << ",\"median_s\":" << pct(t, 0.5)
           << ",\"p10_s\":" << pct(t, 0.1) << ",\"p90_s\":" << pct(t, 0.9) << "}";
    js.first_op = false;
  }
  auto t = time_fn(c, warm, reps, [&](int r) {
    for (auto& op : ops) launch(c, op, r);
  });
  size_t ws = has_gemm ? kWorkspace : 0;
  js.regions << (js.first_region ? "" : ",\n") << "  {\"name\":" << json_str(rname) << ",\"median_s\":" << pct(t, 0.5)
             << ",\"p10_s\":" << pct(t, 0.1) << ",\"p90_s\":" << pct(t, 0.9) << ",\"alloc_bytes\":" << alloc + ws
             << ",\"output_bytes\":" << alloc << ",\"cublaslt_workspace_bytes\":" << ws << ",\"ops\":" << ops.size() << "}";
  js.first_region = false;
  for (auto& op : ops) {
    if (op.desc) cublasLtMatmulDescDestroy(op.desc);
    if (op.la) cublasLtMatrixLayoutDestroy(op.la);
    if (op.lb) cublasLtMatrixLayoutDestroy(op.lb);
    if (op.lc) cublasLtMatrixLayoutDestroy(op.lc);
  }
  free_all(c);
  fprintf(stderr, "done %s\n", rname.c_str());
}

static std::string driver_version() {
  std::string driver;
  if (FILE* p = popen("nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1", "r")) {
    char buf[128] = {0};
    if (fgets(buf, sizeof buf, p)) driver = buf;
    pclose(p);
    while (!driver.empty() && (driver.back() == '\n' || driver.back() == ' ')) driver.pop_back();
  }
  return driver;
}

int main(int argc, char** argv) {
  int reps = 25, warm = 5;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--reps" && i + 1 < argc) reps = atoi(argv[++i]);
    else if (s == "--warmup" && i + 1 < argc) warm = atoi(argv[++i]);
    else files.push_back(s);
  }
  Ctx c;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  c.l2 = prop.l2CacheSize;
  c.sms = prop.multiProcessorCount;
  CK(cudaStreamCreate(&c.st));
  CKL(cublasLtCreate(&c.lt));
  CK(cudaMalloc(&c.ws, kWorkspace));
  int drv = 0, rt = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  const std::string driver = driver_version();
  uint64_t seed = 12345;
  const Ceilings ceil = measure_ceilings(c, seed);

  JsonLists js;
  for (const auto& fn : files) {
    std::ifstream in(fn);
    if (!in) { fprintf(stderr, "cannot open %s\n", fn.c_str()); return 2; }
    std::string stem = fn.substr(fn.find_last_of('/') + 1);
    if (stem.size() > 4 && stem.substr(stem.size() - 4) == ".txt") stem = stem.substr(0, stem.size() - 4);
    for (auto& reg : parse_regions(in)) bench_region(c, stem + "/" + reg.first, reg.second, warm, reps, seed, js);
  }
  printf("{\"device\":%s,\"driver\":%s,\"cuda_driver_api\":%d,\"cuda\":\"%d.%d\",\"l2_bytes\":%zu,"
         "\"sms\":%d,\"reps\":%d,\"warmup\":%d,\n\"ceilings\":{\"gemm_bf16_tflops\":%.2f,"
         "\"gemm_shape\":\"8192x8192x8192\",\"copy_gbps\":%.1f,\"copy_bytes\":%llu,"
         "\"copy_counts\":\"read+write\"},\n\"ops\":[\n%s\n],\n\"regions\":[\n%s\n]}\n",
         json_str(prop.name).c_str(), json_str(driver).c_str(), drv, rt / 1000, (rt % 1000) / 10,
         (size_t)c.l2, c.sms, reps, warm, ceil.gemm_tflops, ceil.copy_gbps, 4ull << 30,
         js.ops.str().c_str(), js.regions.str().c_str());
  return 0;
}
