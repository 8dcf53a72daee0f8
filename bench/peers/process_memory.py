"""A benchmark process's peak resident set, one rule for ours and the peers' scripts
(standard library only: the peers' scripts import it from beside them).

VmHWM (/proc/self/status) is the peak of this process's own image since exec;
getrusage's ru_maxrss is not: after a fork and exec it keeps the forking parent's peak,
so a peer started from a benchmark that holds TensorFlow would report the parent's memory.
"""

from __future__ import annotations


def peak_rss_mb() -> float:
    """This process's peak resident set in MiB (NaN where /proc is absent)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")
