"""The skeleton of a training progress display, shared by ``macaron_tools.train_progress`` (fairseq-train)
and ``macaron_fairseq.pretrain.progress`` (the DeepSpeed pre-trainer): a tqdm bar on a terminal (messages
written above it), plain lines elsewhere (a batch job's log), elapsed time, nothing at all when inactive
(every rank but rank 0)."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO


class ProgressDisplay:
    """A bar over ``total`` steps on a terminal (``use_bar`` None: when ``stream`` is one), or none; each
    :meth:`message` is one line, ``prefix`` first. Inactive: shows nothing."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        total: int | None,
        unit: str,
        desc: str,
        initial: int = 0,
        use_bar: bool | None = None,
        prefix: str = "",
        active: bool = True,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.active = active
        self.prefix = prefix
        self.start = time.monotonic()
        self.bar: Any = None
        if active and (self.stream.isatty() if use_bar is None else use_bar):
            from tqdm import tqdm  # only where a bar is shown

            self.bar = tqdm(
                total=total,
                initial=initial,
                unit=unit,
                file=self.stream,
                dynamic_ncols=True,
                desc=desc,
                leave=True,
            )

    def elapsed(self) -> str:
        """Seconds since the display started, as ``12s``."""
        return f"{time.monotonic() - self.start:.0f}s"

    def message(self, text: str) -> None:
        """One line (above the bar, if there is one)."""
        if not self.active:
            return
        if self.bar is not None:
            self.bar.write(self.prefix + text, file=self.stream)
        else:
            print(self.prefix + text, file=self.stream, flush=True)

    def advance(self, steps: int, postfix: str | None = None) -> None:
        """Move the bar ``steps`` forward (no-op without a bar), with ``postfix`` after it."""
        if self.bar is None:
            return
        self.bar.update(max(0, steps))
        if postfix is not None:
            self.bar.set_postfix_str(postfix)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
