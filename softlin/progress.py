"""One-line progress messages for workflow jobs: to the job's log file and to stderr.

A job whose script dies of an uncaught exception also gets the traceback in its log file (the path
Snakemake prints with the error), not only on the stderr of the run (or of its SLURM job).
"""

from __future__ import annotations

import sys
import time
import traceback


class Progress:
    """``Progress(log_path, "c3 train isotropic seed 777")("L=4096 done")`` writes a timestamped line."""

    def __init__(self, log_path=None, tag: str = ""):
        self.tag = tag
        self.t0 = time.perf_counter()
        self.fh = open(log_path, "a") if log_path else None
        if self.fh:
            _log_uncaught_exceptions(self.fh)

    def __call__(self, msg: str) -> None:
        line = f"[{self.tag}] {msg} (+{time.perf_counter() - self.t0:.1f} s)"
        print(line, file=sys.stderr, flush=True)
        if self.fh:
            print(line, file=self.fh, flush=True)

    def detail(self, msg: str) -> None:
        """A long line for the job's log file only (stderr, the terminal, keeps the short line);
        to stderr when there is no log file."""
        line = f"[{self.tag}] {msg} (+{time.perf_counter() - self.t0:.1f} s)"
        print(line, file=self.fh or sys.stderr, flush=True)

    def close(self) -> None:
        if self.fh:
            self.fh.close()


def _log_uncaught_exceptions(fh) -> None:
    """Chain ``sys.excepthook`` so that an uncaught exception is also written to ``fh``."""
    previous = sys.excepthook

    def hook(etype, value, tb):
        try:
            fh.write("".join(traceback.format_exception(etype, value, tb)))
            fh.flush()
        except Exception:  # closed or unwritable log: stderr still gets it
            pass
        previous(etype, value, tb)

    sys.excepthook = hook
