"""One fuzz case under the caps, shared by scripts/fuzz_specs.py and scripts/fuzz_fields.py."""
import os
import signal
import subprocess
import threading
import time


def run_capped(cmd, stdin_text, max_s):
    """(exit status or None when killed at the cap, stderr, seconds, peak RSS GB). The child runs in
    its own session, killed with its process group at the cap; its peak memory comes from wait4."""
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    timed_out = []
    timer = threading.Timer(max_s, lambda: (timed_out.append(True), os.killpg(p.pid, signal.SIGKILL)))
    timer.start()
    if stdin_text is not None:
        try:
            p.stdin.write(stdin_text.encode("utf-8", errors="surrogateescape"))
            p.stdin.close()
        except BrokenPipeError:
            pass
    err = p.stderr.read().decode("utf-8", errors="replace")
    _, status, usage = os.wait4(p.pid, 0)
    timer.cancel()
    p.stderr.close()
    seconds = time.monotonic() - start
    if timed_out:
        return None, err, seconds, usage.ru_maxrss / 1e6
    return os.waitstatus_to_exitcode(status), err, seconds, usage.ru_maxrss / 1e6
