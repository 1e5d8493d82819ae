"""One-line progress messages for workflow jobs: to the job's log file and to stderr."""

from __future__ import annotations

import sys
import time


class Progress:
    """``Progress(log_path, "c3 train isotropic seed 777")("L=4096 done")`` writes a timestamped line."""

    def __init__(self, log_path=None, tag: str = ""):
        self.tag = tag
        self.t0 = time.perf_counter()
        self.fh = open(log_path, "a") if log_path else None

    def __call__(self, msg: str) -> None:
        line = f"[{self.tag}] {msg} (+{time.perf_counter() - self.t0:.1f} s)"
        print(line, file=sys.stderr, flush=True)
        if self.fh:
            print(line, file=self.fh, flush=True)

    def close(self) -> None:
        if self.fh:
            self.fh.close()
