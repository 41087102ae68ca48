"""Peak memory of a process tree (a pipeline, its pool workers and their children), sampled from ``/proc``.

PSS divides shared pages between the processes that share them (so forked workers are not counted
twice); RSS counts them in every process.
"""

from __future__ import annotations

import os
import threading


def process_tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(entry))
            except (OSError, IndexError):
                continue
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def memory_kb(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in kB, (0, 0) if it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            values = {line.split(":")[0]: int(line.split()[1]) for line in handle if line.endswith("kB\n")}
        return values.get("Rss", 0), values.get("Pss", 0)
    except (OSError, ValueError):
        return 0, 0


def describe_process(pid: int) -> str:
    """The command line of ``pid`` (truncated)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace").strip()[:120]
    except OSError:
        return "?"


class TreeMemorySampler(threading.Thread):
    """Samples the summed RSS/PSS of a process tree until stopped; keeps the peaks."""

    def __init__(self, root: int, interval: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.peak_rss_kb = self.peak_pss_kb = self.max_single_rss_kb = 0
        self.largest_process = ""
        self.stop_event = threading.Event()
        self.phase = ""
        """Set by the caller (e.g. from the stage names a pipeline logs): peaks are also kept per phase."""
        self.peak_pss_kb_by_phase: dict[str, int] = {}

    def run(self) -> None:
        while not self.stop_event.is_set():
            pids = process_tree(self.root)
            usage = [memory_kb(pid) for pid in pids]
            self.peak_rss_kb = max(self.peak_rss_kb, sum(rss for rss, _ in usage))
            pss_sum = sum(pss for _, pss in usage)
            self.peak_pss_kb = max(self.peak_pss_kb, pss_sum)
            phase = self.phase
            self.peak_pss_kb_by_phase[phase] = max(self.peak_pss_kb_by_phase.get(phase, 0), pss_sum)
            rss, pid = max((rss, pid) for (rss, _), pid in zip(usage, pids, strict=True))
            if rss > self.max_single_rss_kb:
                self.max_single_rss_kb, self.largest_process = rss, describe_process(pid)
            self.stop_event.wait(self.interval)
