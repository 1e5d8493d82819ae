"""SIGINT or SIGTERM to the ``snakemake`` process stops its jobs at once (docs/faults.md).

Alone, Snakemake lets running jobs run to their end: on Ctrl-C sent to its process alone
(``kill -INT PID``) it waits for them, on SIGTERM it stops scheduling and waits ("graceful").
:func:`forward_to_jobs` makes either signal send SIGTERM to every process below this one first (a
C5 training job stops within a fraction of a second, its last checkpoint kept:
:class:`softlin.checkpoint.Stop`), then lets Snakemake handle an interrupt as it does Ctrl-C
(it cancels the jobs and exits).  The workflow installs it for both when it starts (``onstart``,
after Snakemake's own handlers, which it chains to).
"""

from __future__ import annotations

import signal
import threading


def terminate_children() -> int:
    """SIGTERM to every process below this one (psutil; none if it is missing); how many got it."""
    try:
        import psutil
    except ImportError:
        return 0
    sent = 0
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return 0
    for child in children:
        try:
            child.send_signal(signal.SIGTERM)
            sent += 1
        except psutil.Error:
            pass
    return sent


def _again(times: int = 20, every: float = 0.1) -> None:
    """:func:`terminate_children` repeated for a while: a job the scheduler was starting as the
    signal came (seen: a C4 job that then ran to its end, Snakemake waiting for it) gets it too."""
    import time

    for _ in range(times):
        time.sleep(every)
        terminate_children()


def forward_to_jobs(signum: int = signal.SIGINT) -> bool:
    """Install the handler of ``signum`` (once per process, in its main thread only): SIGTERM to
    the jobs, then, for SIGINT, the previous handler (Python's KeyboardInterrupt; an ignored
    SIGINT, as in a background job of a shell, stays ignored), for SIGTERM a KeyboardInterrupt
    (Snakemake's own handler would wait for the jobs).  True if installed now."""
    if threading.current_thread() is not threading.main_thread():
        return False
    prev = signal.getsignal(signum)
    if getattr(prev, "_softlin", False) or (signum == signal.SIGINT and not callable(prev)):
        return False
    if signum != signal.SIGINT:
        prev = signal.default_int_handler

    def forward(sig, frame):
        terminate_children()
        threading.Thread(target=_again, daemon=True).start()
        prev(sig, frame)

    forward._softlin = True
    signal.signal(signum, forward)
    return True
