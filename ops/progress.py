"""Progress shown while a command works: bars with clean numbers, a countdown of a run of
known length, and a tally of a Spark job's tasks.

tqdm shows a bar's count as it sums it, so a bar counting seconds in float steps shows
``0.33499999999999996/2.0``; these formats round. Every bar here goes to stderr, and is off
with ``--quiet`` or when stderr is not a terminal (tqdm's own rule, ``disable=None``), so
pipes, logs and tests see only the command's lines."""
from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

from tqdm import tqdm

SECONDS_BAR_FORMAT = "{desc}{percentage:3.0f}%|{bar}| {n:.1f}/{total:.1f} s [{elapsed}<{remaining}{postfix}]"
"""tqdm ``bar_format`` of a bar counting seconds (``0.3/2.0 s``)."""

COUNTDOWN_FORMAT = "{desc}: " + SECONDS_BAR_FORMAT.removeprefix("{desc}")
"""A run's bar, named (``run: 40%|####| 12.0/30.0 s [...]``)."""

ELAPSED_FORMAT = "{desc}: {n:.1f} s"
"""A run of unknown length (``--no-loop``): the seconds it has run."""

TICK_S = 0.5
"""How often a running bar redraws itself."""


class _Ticker:
    """Redraws a bar every ``TICK_S`` from a thread until stopped: the command's own thread
    is busy running the work, and a bar must move while it does."""

    def __init__(self, tick: Callable[[], None]) -> None:
        self._tick = tick
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="omdp-progress", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(TICK_S):
            self._tick()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


class RunCountdown:
    """A bar of a run's seconds (``omdp run``, ``omdp demo``): ``start()`` when the run
    begins, ``write(line)`` for the run's own messages (printed above the bar), ``close()``
    at its end. ``seconds`` None: the seconds run so far, without a total. ``quiet``: no
    bar and no messages (the command's report and errors still print)."""

    def __init__(self, seconds: float | None, *, desc: str = "run", quiet: bool = False,
                 file: IO[str] | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.file = file if file is not None else sys.stderr
        self.quiet = quiet
        self.seconds = seconds
        self._clock = clock
        self._started: float | None = None
        self._lock = threading.Lock()
        self.bar = tqdm(total=seconds, desc=desc, file=self.file, disable=True if quiet else None, leave=False,
                        dynamic_ncols=True, bar_format=COUNTDOWN_FORMAT if seconds else ELAPSED_FORMAT)
        self._ticker = _Ticker(self.tick)

    @property
    def shown(self) -> bool:
        """Whether the bar draws at all (not quiet, and a terminal)."""
        return not self.bar.disable

    def start(self) -> None:
        """The run begins: the countdown starts from here."""
        if self._started is None:
            self._started = self._clock()
            if self.shown:
                self._ticker.start()

    def tick(self) -> None:
        """Redraw with the seconds since ``start``, capped at the run's length."""
        if self._started is None:
            return
        elapsed = self._clock() - self._started
        with self._lock:
            self.bar.n = round(min(elapsed, self.seconds) if self.seconds else elapsed, 1)
            self.bar.refresh()

    def write(self, line: str) -> None:
        """One of the run's messages, above the bar (stderr); none with ``quiet``."""
        if self.quiet:
            return
        if self.shown:
            with self._lock:
                self.bar.write(line, file=self.file)
        else:
            print(line, file=self.file, flush=True)

    def close(self) -> None:
        self._ticker.stop()
        self.bar.close()

    def __enter__(self) -> RunCountdown:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class SparkTasksBar:
    """A Spark job's progress: tasks done of the tasks of the stages seen so far, from the
    driver's status tracker (``omdp analytics``). Spark's own console bar stays off
    (``spark.ui.showConsoleProgress``): it ignores ``--quiet`` and draws into logs."""

    def __init__(self, tracker: Any, *, desc: str = "spark", quiet: bool = False, file: IO[str] | None = None) -> None:
        self.tracker = tracker
        self.file = file if file is not None else sys.stderr
        self.bar = tqdm(total=0, desc=desc, unit="task", file=self.file, disable=True if quiet else None, leave=False,
                        dynamic_ncols=True)
        self._stages: dict[int, tuple[int, int]] = {}  # stage id -> (tasks, done)
        self._jobs_before = set(tracker.getJobIdsForGroup())  # earlier jobs of the session: not this bar's
        self._ticker = _Ticker(self.tick)
        if not self.bar.disable:
            self._ticker.start()

    def tick(self) -> None:
        """Read the task counts of every stage of the jobs started since the bar was made (a
        job that ran between two ticks counts too) and redraw; a stage no longer active is done."""
        active = set(self.tracker.getActiveStageIds())
        self._stages.update({sid: (tasks, tasks) for sid, (tasks, _) in self._stages.items() if sid not in active})
        seen, finished = set(active), set()
        for jid in set(self.tracker.getJobIdsForGroup()) - self._jobs_before:
            job = self.tracker.getJobInfo(jid)
            if job is not None:
                seen.update(job.stageIds)
                if job.status == "SUCCEEDED":  # its stages are done (a skipped one ran earlier)
                    finished.update(job.stageIds)
        for sid in seen:
            info = self.tracker.getStageInfo(sid)
            if info is not None:
                done = info.numTasks if sid in finished else info.numCompletedTasks
                self._stages[sid] = (info.numTasks, done)
        self.bar.total = sum(t for t, _ in self._stages.values())
        self.bar.n = sum(d for _, d in self._stages.values())
        self.bar.set_postfix_str(f"{len(self._stages)} stages", refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        self._ticker.stop()
        self.bar.close()

    def __enter__(self) -> SparkTasksBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
