#!/usr/bin/env python3
"""Run a list of peakcast cases, one process per case, spread over the visible GPUs.

  python3 calibration/harness/run_corpus.py --corpus calibration/harness/corpus.json \
      --out $OUT/records.jsonl --log $OUT/cases.log [--select smoke|single|multi|all]
      [--groups g1,g2] [--names n1,n2] [--skip-done FILE.jsonl] [--deadline-s 540] [--timeout-s 240]

Single-GPU cases (real one-GPU runs and fake-process-group ranks) run in parallel, one per GPU.
Each GPU slot keeps --spares (default 2) spare workers that have already imported torch and Megatron and waits for
its case on stdin, so the ~10-20 s import cost overlaps the previous case.
Real multi-GPU cases (gpus > 1) run afterwards, one at a time, through torchrun over all GPUs.
A case that is not finished after --timeout-s is killed and recorded with an "error".
No case is started after --deadline-s (seconds since start).
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from corpus_lib import expand  # noqa: E402

RUN_CASE = os.path.join(HERE, "run_case.py")
SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
            "NVSHMEM_DISABLE_NVLS": "1", "PYTHONUNBUFFERED": "1"}


def log(args, msg):
    line = f"[{time.strftime('%H:%M:%S')}] {msg}"
    print(line, flush=True)
    with open(args.log, "a") as f:
        f.write(line + "\n")


def append_log(args, path, title):
    try:
        with open(path, errors="replace") as f:
            txt = f.read()
    except OSError:
        txt = ""
    with open(args.log, "a") as f:
        f.write(f"===== {title} =====\n{txt[-20000:]}\n")


def timeout_record(case, seconds, args):
    rec = {"record_version": 1, "case": case["name"], "group": case["group"], "spec": case["spec"],
           "rank": None, "measured": None, "provenance": None,
           "error": f"killed by run_corpus after {seconds:.0f} s (timeout)"}
    with open(args.out, "a") as f:
        f.write(json.dumps(rec) + "\n")


class Slot:
    def __init__(self, gpu, args, tmpdir):
        self.gpu, self.args, self.tmp = gpu, args, tmpdir
        self.spares = []
        self.cur = None  # (proc, case, t0, logpath)
        self.n = 0
        for _ in range(args.spares):
            self._spawn()

    def _spawn(self):
        self.n += 1
        logpath = os.path.join(self.tmp, f"gpu{self.gpu}_{self.n}.log")
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(self.gpu), **SAFE_ENV)
        lf = open(logpath, "w")
        p = subprocess.Popen([sys.executable, RUN_CASE, "--stdin", "--out", self.args.out],
                             stdin=subprocess.PIPE, stdout=lf, stderr=subprocess.STDOUT, env=env,
                             text=True, start_new_session=True)
        self.spares.append((p, logpath))

    def start(self, case):
        path = os.path.join(self.tmp, case["name"] + ".json")
        with open(path, "w") as f:
            json.dump(case, f)
        p, logpath = self.spares.pop(0)
        p.stdin.write(path + "\n")
        p.stdin.flush()
        p.stdin.close()
        self.cur = (p, case, time.time(), logpath)
        self._spawn()

    def poll(self):
        if self.cur is None:
            return None
        p, case, t0, logpath = self.cur
        if p.poll() is not None:
            self.cur = None
            return (case, time.time() - t0, logpath, False)
        if time.time() - t0 > self.args.timeout_s:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            self.cur = None
            timeout_record(case, time.time() - t0, self.args)
            return (case, time.time() - t0, logpath, True)
        return None

    def close(self):
        for p, _ in self.spares:
            try:
                p.stdin.close()
            except Exception:
                pass
            try:
                p.wait(timeout=30)
            except Exception:
                os.killpg(p.pid, signal.SIGKILL)


def gpu_count():
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis:
        return [int(x) for x in vis.split(",") if x.strip()]
    out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
    return list(range(len([l for l in out.splitlines() if l.startswith("GPU")])))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=os.path.join(HERE, "corpus.json"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--select", default="all", choices=["smoke", "single", "multi", "all",
                                                         "smoke-first"])
    ap.add_argument("--groups", default="")
    ap.add_argument("--names", default="")
    ap.add_argument("--skip-done", default="", help="jsonl of records already measured")
    ap.add_argument("--deadline-s", type=float, default=540)
    ap.add_argument("--timeout-s", type=float, default=240)
    ap.add_argument("--spares", type=int, default=2,
                    help="pre-imported idle workers kept per GPU")
    ap.add_argument("--no-multi", action="store_true", help="skip real multi-GPU cases")
    args = ap.parse_args()
    t_start = time.time()

    with open(args.corpus) as f:
        cases = expand(json.load(f))
    if args.select == "smoke":
        cases = [c for c in cases if c["smoke"]]
    elif args.select == "smoke-first":
        cases = [c for c in cases if c["smoke"]] + [c for c in cases if not c["smoke"]]
    elif args.select == "single":
        cases = [c for c in cases if c["gpus"] == 1]
    elif args.select == "multi":
        cases = [c for c in cases if c["gpus"] > 1]
    if args.groups:
        g = set(args.groups.split(","))
        cases = [c for c in cases if c["group"] in g]
    if args.names:
        n = args.names.split(",")
        cases = [c for c in cases if c["name"] in n]
    if args.skip_done:
        done = set()
        for fn in args.skip_done.split(","):
            if os.path.exists(fn):
                for line in open(fn):
                    r = json.loads(line)
                    if not r.get("error"):
                        done.add(r["case"])
        cases = [c for c in cases if c["name"] not in done]

    singles = [c for c in cases if c["gpus"] == 1]
    multis = [] if args.no_multi else [c for c in cases if c["gpus"] > 1]
    gpus = gpu_count()
    log(args, f"{len(singles)} single-GPU cases on GPUs {gpus}, {len(multis)} multi-GPU cases")
    tmp = tempfile.mkdtemp(prefix="peakcast_")

    slots = [Slot(g, args, tmp) for g in gpus] if singles else []
    queue = list(singles)
    while queue or any(s.cur for s in slots):
        for s in slots:
            r = s.poll()
            if r:
                case, dt, lp, to = r
                log(args, f"gpu{s.gpu} done {case['name']} in {dt:.1f}s{' TIMEOUT' if to else ''}")
                append_log(args, lp, f"{case['name']} (gpu{s.gpu})")
            if s.cur is None and queue:
                if time.time() - t_start > args.deadline_s:
                    log(args, f"deadline reached, not starting {len(queue)} cases: "
                              + ",".join(c['name'] for c in queue))
                    queue = []
                    break
                case = queue.pop(0)
                log(args, f"gpu{s.gpu} start {case['name']}")
                s.start(case)
        time.sleep(0.2)
    for s in slots:
        s.close()

    for case in multis:
        if time.time() - t_start > args.deadline_s:
            log(args, f"deadline reached, skipping multi-GPU {case['name']}")
            continue
        path = os.path.join(tmp, case["name"] + ".json")
        with open(path, "w") as f:
            json.dump(case, f)
        n = case["gpus"]
        logpath = os.path.join(tmp, case["name"] + ".log")
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=",".join(str(g) for g in gpus[:n]), **SAFE_ENV)
        log(args, f"torchrun x{n} start {case['name']}")
        t0 = time.time()
        with open(logpath, "w") as lf:
            p = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--standalone",
                                  f"--nproc_per_node={n}", RUN_CASE, "--case", path,
                                  "--out", args.out], stdout=lf, stderr=subprocess.STDOUT,
                                 env=env, start_new_session=True)
            try:
                p.wait(timeout=args.timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                timeout_record(case, time.time() - t0, args)
        log(args, f"torchrun done {case['name']} rc={p.returncode} in {time.time() - t0:.1f}s")
        append_log(args, logpath, case["name"] + " (torchrun)")
    log(args, f"all done in {time.time() - t_start:.1f}s")


if __name__ == "__main__":
    main()
