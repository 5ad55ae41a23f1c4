"""The grader's notebook runner: a notebook's cells executed in an IPython kernel that nbclient drives.

:func:`llmcourse.exercises.cli.grade` imports this module when it runs a notebook (nbclient takes half a
second to import). One :class:`Kernel` is one kernel: jupyter_client starts it (ipykernel in this Python,
its input and output nowhere, in a session of its own, in the notebook's folder, on Unix sockets in a
folder of the grader's), nbclient sends it each cell, waits for the reply within the cell's time limit and
sees the kernel die; it is killed at the end, with whatever it started.

What nbclient does not do, and the grader keeps from the worker process this replaced (so that every
guarantee of tests/test_hostile_input.py holds):

* The cells do not run as the notebook wrote them: each is a call of the grader's runner in the kernel
  (:class:`llmcourse.exercises.cli._Cells`, made by a first, set-up cell), which runs the notebook's source
  in a namespace of its own under a time limit (SIGALRM) and reports each ``check(...)`` call and how the
  cell ended as JSON lines on a pipe whose write end the kernel got when it started. With the cells as
  they are, ipykernel's error reply calls ``str`` on the exception unguarded (a message that cannot be
  printed), an answer checked just before ``os._exit()`` would be lost with the IOPub messages the kernel
  had no time to send, ``exit()`` would stop the kernel and ``input()`` raise ``StdinNotImplementedError``,
  and the grade would rest on messages a cell can send as well as the grader (``display(...)``).
* A cell that does not stop: nbclient's ``interrupt_on_timeout`` interrupts again and again a cell that
  ignores the interrupt (a hang), and after its ``CellTimeoutError`` it leaves a task reading IOPub; the
  grader gives the runner :data:`llmcourse.exercises.cli._GRACE` more seconds, then kills the kernel.
* The whole notebook's time limit (nbclient has none): each cell's limit is at most what is left of it, and
  so is the kernel's start.
* After a crash (nbclient's ``DeadKernelError``) or a kill, a new kernel runs again the cells that had
  succeeded, then goes on (:func:`llmcourse.exercises.cli._execute`).

What a cell still sends over ZeroMQ is never kept (:class:`_Client`): a frame over :data:`_LONGEST` bytes is
refused by the grader's sockets, which queue at most :data:`_QUEUED` messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import zmq
import zmq.asyncio
from ipykernel.kernelspec import make_ipkernel_cmd
from jupyter_client import AsyncKernelManager
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_core.utils import ensure_async
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError

_LONGEST = 1 << 20  # bytes: a longer line on the pipe is dropped, a longer ZeroMQ frame refused
_QUEUED = 64  # ZeroMQ messages the grader's sockets queue (IOPub drops the rest; the grader keeps none)
_IOPUB_WAIT = 0  # seconds nbclient waits for a cell's IOPub messages after its reply: none is used
_KERNEL_ARGS = ["--HistoryManager.hist_file=:memory:", "--IPKernelApp.capture_fd_output=False"]
_MARK = "LLMCOURSE_GRADER_KERNEL"  # in the kernel's environment (and its children's): the grader's token
_PR_SET_CHILD_SUBREAPER = 36  # Linux's prctl option: orphans of the kernel's descendants become its children
_PR_GET_CHILD_SUBREAPER = 37
_QUIET = logging.getLogger("llmcourse.grader")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False

_SETUP = (
    "import sys\nsys.path.insert(0, {root!r})\nfrom llmcourse.exercises.cli import _Cells\n"
    "_grader = _Cells({fd}, {seed!r}, {forced!r}, {cell_timeout!r})"
)
_CELL = "_grader.run({n}, {source!r})"


def _limits(memory: int) -> Callable[[], None]:
    """What the kernel's process runs before the kernel starts (in the forked child): its address space is at
    most ``memory`` bytes (a cell allocating past it gets a MemoryError; the notebook cannot raise the limit),
    and on Linux it is a subreaper, so that a process a cell starts stays its descendant even after its parent
    ends or it calls ``setsid`` (see :func:`_kill_all`). Never raises (Popen would fail)."""
    prctl = None
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            import ctypes

            prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork

    def preexec() -> None:
        with contextlib.suppress(Exception):
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        with contextlib.suppress(Exception):
            if prctl is not None:
                prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)

    return preexec


def _stats() -> dict[int, tuple[int, int]]:
    """Every process this user can see in /proc: pid -> (parent pid, session) (empty where there is no /proc)."""
    found: dict[int, tuple[int, int]] = {}
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if name.isdigit():
                with contextlib.suppress(OSError, ValueError, IndexError), open(f"/proc/{name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
                    found[int(name)] = (int(fields[1]), int(fields[3]))
    return found


def _processes() -> dict[int, int]:
    """Every process this user can see in /proc: pid -> parent pid (empty where there is no /proc)."""
    return {pid: parent for pid, (parent, _) in _stats().items()}


def _marked(pid: int, mark: bytes) -> bool:
    """Whether process ``pid`` was started with the grader's ``mark`` in its environment."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return mark in f.read().split(b"\0")
    except OSError:
        return False


def _kill_all(root: int | None, token: str) -> None:
    """Kill (on Linux) every process the notebook started: the descendants of ``root`` (the kernel, alive or
    not yet reaped, so its number is still its own; it is a subreaper, so they include the orphans of processes
    that ended and those that called ``setsid``) and every process started with the kernel's ``token`` in its
    environment (those left when the kernel itself crashed). Each is stopped first (none forks or reaps any
    more, so no number found is reused before the kill), the search is repeated until it finds none new, then
    all are killed."""
    mark = f"{_MARK}={token}".encode()
    stopped: set[int] = set()
    for _ in range(100):
        parents = _processes()
        found = {pid for pid in parents if pid not in stopped and _marked(pid, mark)}
        if root is not None:
            found.add(root)
            children: dict[int, list[int]] = {}
            for pid, parent in parents.items():
                children.setdefault(parent, []).append(pid)
            todo = [root]
            while todo:
                for child in children.get(todo.pop(), []):
                    if child not in found:
                        found.add(child)
                        todo.append(child)
        found -= stopped | {os.getpid()}
        if not found:
            break
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)
        stopped |= found
    for pid in stopped:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _prctl() -> Any:
    """Linux's ``prctl`` (None elsewhere, or where it cannot be found)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except Exception:  # pragma: no cover - a libc without prctl
        return None


_REAPING = threading.Lock()
_reapers = [0, 0]  # the graders in this process that are running a kernel; the subreaper flag before the first


class _Orphans:
    """While a kernel runs, the grader's own process is a subreaper (on Linux): a process the notebook started is
    the kernel's descendant while the kernel lives (the kernel is a subreaper too, see :func:`_limits`), and when
    the kernel dies first (a crash, ``os._exit``, a kill), its orphans become the grader's children instead of
    init's, whatever they did meanwhile (a new session, an empty environment, so no token). :meth:`sweep` kills
    them, with their descendants, and reaps them.

    Which children are the notebook's: those that were not the grader's when the kernel started and whose session
    is not the grader's (the kernel runs in a session of its own, and no process can join another session again;
    a process another thread of the grader starts meanwhile stays in the grader's session, and is left alone,
    unless it was started in a new session too). Elsewhere than Linux there is no subreaper and no sweep."""

    def __init__(self) -> None:
        self.prctl = _prctl()
        self.before: set[int] = set()

    def __enter__(self) -> _Orphans:
        if self.prctl is None:
            return self
        self.before = set(_children_of(os.getpid()))
        with _REAPING:
            if _reapers[0] == 0:
                import ctypes

                flag = ctypes.c_int(0)
                with contextlib.suppress(Exception):
                    self.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)
                _reapers[1] = flag.value
                with contextlib.suppress(Exception):
                    self.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
            _reapers[0] += 1
        return self

    def __exit__(self, *exc: object) -> None:
        if self.prctl is None:
            return
        with _REAPING:
            _reapers[0] -= 1
            if _reapers[0] == 0:
                with contextlib.suppress(Exception):
                    self.prctl(_PR_SET_CHILD_SUBREAPER, _reapers[1], 0, 0, 0)

    def sweep(self, token: str) -> None:
        """Kill and reap the notebook's processes that became the grader's children (see the class); never
        raises. Call it once the kernel itself is gone and reaped."""
        if self.prctl is None:
            return
        with contextlib.suppress(Exception):
            session = os.getsid(0)
            for _ in range(100):
                found = [
                    pid for pid, sid in _children_of(os.getpid()).items() if pid not in self.before and sid != session
                ]
                if not found:
                    return
                for pid in found:
                    _kill_all(pid, token)  # it and its descendants, stopped first, then killed
                deadline = time.monotonic() + 5
                for pid in found:
                    while time.monotonic() < deadline:
                        try:
                            if os.waitpid(pid, os.WNOHANG)[0] != 0:
                                break
                        except ChildProcessError:
                            break
                        time.sleep(0.01)


def _children_of(parent: int) -> dict[int, int]:
    """The processes whose parent is ``parent`` (zombies included): pid -> session (empty where there is no
    /proc)."""
    return {pid: session for pid, (ppid, session) in _stats().items() if ppid == parent}


def _raise_if_cancelled() -> None:
    """Go on being cancelled (the teacher's Ctrl-C) where nbclient turned it into an error: it takes a
    cancelled wait for a reply for a dead kernel (DeadKernelError)."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


class _Specs(KernelSpecManager):
    """The one kernel the grader starts: ipykernel in this Python (not whatever "python3" means on the
    teacher's machine)."""

    def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
        return KernelSpec(argv=make_ipkernel_cmd(), display_name="llmcourse grader", language="python")


class _Manager(AsyncKernelManager):
    """A kernel manager whose clients use its ZeroMQ context (with the grader's limits on every socket)."""

    def client(self, **kwargs: Any) -> Any:
        return super().client(context=self.context, **kwargs)


class _Client(NotebookClient):
    """nbclient's client, keeping nothing a cell sends: no outputs, no widget state (the notebook's output is
    hidden, and a cell could send without end)."""

    def output(self, outs: list, msg: dict, display_id: Any, cell_index: int) -> None:
        return None

    def clear_output(self, outs: list, msg: dict, cell_index: int) -> None:
        return None

    def handle_comm_msg(self, outs: list, msg: dict, cell_index: int) -> None:
        return None


class _Pipe:
    """The pipe a kernel reports on: its write end goes to the kernel when it starts; the grader reads JSON
    lines from the other as they come (never blocking), each at most :data:`_LONGEST` bytes, and hands each
    object to ``deliver``."""

    def __init__(self, deliver: Callable[[dict], None]) -> None:
        self.read_end, self.write_end = os.pipe()
        os.set_blocking(self.read_end, False)
        self._deliver, self._buf, self._open = deliver, b"", True
        self._loop: asyncio.AbstractEventLoop | None = None

    def watch(self) -> None:
        """Read whenever the kernel writes (once its write end is the kernel's alone)."""
        os.close(self.write_end)
        self.write_end = -1
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self.read_end, self.read)

    def read(self) -> None:
        """Read what the kernel wrote so far."""
        while self._open:
            try:
                chunk = os.read(self.read_end, 65_536)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:  # the kernel is gone
                self._open = False
                if self._loop is not None:
                    self._loop.remove_reader(self.read_end)
                return
            *lines, self._buf = (self._buf + chunk).split(b"\n")
            if len(self._buf) > _LONGEST:
                self._buf = b""
            for line in lines:
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if isinstance(msg, dict) and isinstance(msg.get("kind"), str):
                    self._deliver(msg)

    def close(self) -> None:
        if self._open and self._loop is not None:
            self._loop.remove_reader(self.read_end)
        self._open = False
        for fd in (self.read_end, self.write_end):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)


class Kernel:
    """One kernel running cells of one notebook for the grader (see the module); ``tally`` hears what
    happens: ``start(n)``, ``check(n, msg)``, ``end(n, error)``, ``stopped(kind, status)``."""

    def __init__(self, path: Path, tally: Any, job: dict, workdir: str) -> None:
        self.path, self.tally, self.job, self.workdir = path, tally, job, workdir
        self.current: int | None = None
        self.ended: dict | None = None
        self.reply: dict | None = None
        self.pipe = _Pipe(self._heard)
        self.context = zmq.asyncio.Context()
        self.context.setsockopt(zmq.MAXMSGSIZE, _LONGEST)
        self.context.setsockopt(zmq.RCVHWM, _QUEUED)
        self.km = _Manager(
            kernel_name="llmcourse-grader",
            kernel_spec_manager=_Specs(),
            context=self.context,
            connection_file=os.path.join(workdir, "kernel.json"),
            # Unix sockets in the grader's own folder: no TCP port to race for, none another user can reach
            **({"transport": "ipc", "ip": os.path.join(workdir, "kernel")} if os.name == "posix" else {}),
        )
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell()])
        self.client = _Client(nb, km=self.km, allow_errors=True, record_timing=False, log=_QUIET)
        self.client.iopub_timeout = _IOPUB_WAIT
        self.client.on_cell_executed = self._executed
        self.process: subprocess.Popen | None = None
        self.pgid: int | None = None
        self.token = secrets.token_hex(16)
        self.orphans = _Orphans()

    def _heard(self, msg: dict) -> None:
        if msg["kind"] == "check" and self.current is not None:
            self.tally.check(self.current, msg)
        elif msg["kind"] == "end":
            self.ended = msg

    def _executed(self, cell: Any, cell_index: int, execute_reply: dict) -> None:
        self.reply = execute_reply.get("content") if isinstance(execute_reply, dict) else None

    def _left(self) -> float:
        return self.job["deadline"] - time.monotonic()

    async def run(self, cells: list[tuple[int, str]]) -> None:
        """Start the kernel, run ``cells`` (number, source) in it, and kill it, whatever happens."""
        with self.orphans:
            await self._run(cells)

    async def _run(self, cells: list[tuple[int, str]]) -> None:
        try:
            if await self._start():
                for n, source in cells:
                    if not await self._cell(n, source):
                        return
                self.tally.stopped("done", None)
        finally:
            await self._stop()
            self.pipe.read()
            self.pipe.close()
            self.context.destroy(linger=0)

    async def _start(self) -> bool:
        """Start the kernel and set the runner up in it; False (and the tally told) if that fails."""
        env = {
            **os.environ,
            "MPLBACKEND": "Agg",
            "PYTHONIOENCODING": "utf-8",
            "IPYTHONDIR": os.path.join(self.workdir, "ipython"),  # no profile or start-up file of the teacher's
            # one thread for the numerical libraries and few malloc arenas: under the address-space limit
            # (--memory), each thread's stack and buffers count, and OpenBLAS starts one per core at import
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "MALLOC_ARENA_MAX": "2",
            _MARK: self.token,
        }
        job, root = self.job, str(Path(__file__).resolve().parents[2])
        setup = _SETUP.format(
            root=root, fd=self.pipe.write_end, seed=job["seed"], forced=job["forced"], cell_timeout=job["cell_timeout"]
        )
        try:
            await asyncio.wait_for(self._launch(env), max(self._left(), 0.001))
            self.pipe.watch()
            self.client.timeout_func = lambda cell: max(self._left(), 0.001)
            await self.client.async_execute_cell(nbformat.v4.new_code_cell(setup), 0, store_history=False)
        except TimeoutError:  # asyncio's or nbclient's (a CellTimeoutError): its only limit was the notebook's
            self.tally.stopped("notebook", None)
            return False
        except Exception:  # no kernel, or it died before its first cell
            _raise_if_cancelled()
            self.tally.stopped("exit", self._status())
            return False
        if self.reply is None or self.reply.get("status") != "ok":  # the runner could not be set up
            self.tally.stopped("exit", self._status())
            return False
        return True

    async def _launch(self, env: dict) -> None:
        await self.km.start_kernel(
            extra_arguments=_KERNEL_ARGS,
            env=env,
            cwd=str(self.path.resolve().parent),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(self.pipe.write_end,),
            **({"preexec_fn": _limits(self.job["memory"])} if os.name == "posix" else {}),
        )
        self.process = getattr(self.km.provisioner, "process", None)
        self.pgid = getattr(self.km.provisioner, "pgid", None)
        self.client.startup_timeout = max(1, int(self._left()) + 1)
        await self.client.async_start_new_kernel_client()

    async def _cell(self, n: int, source: str) -> bool:
        """Run cell ``n`` and tell the tally how it ended; False when this kernel is done for."""
        self.current, self.ended, self.reply = n, None, None
        self.tally.start(n)
        notebook = self._left() <= self.job["cell_timeout"] + self.job["grace"]
        limit = max(min(self._left(), self.job["cell_timeout"] + self.job["grace"]), 0.001)
        self.client.timeout_func = lambda cell: limit
        cell = nbformat.v4.new_code_cell(_CELL.format(n=n, source=source))
        try:
            await self.client.async_execute_cell(cell, 0, store_history=False)
        except CellTimeoutError:  # the runner did not stop the cell in time: kill the kernel, then hear the rest
            await self._stop()
            self.pipe.read()
            self.tally.stopped("notebook" if notebook else "timeout", None)
            return False
        except Exception:  # the kernel died (nbclient's DeadKernelError), or its sockets failed
            _raise_if_cancelled()
            await self._stop()
            self.pipe.read()
            self.tally.stopped("exit", self._status())
            return False
        self.pipe.read()  # the runner wrote before the kernel replied
        self.tally.end(n, self._error())
        return True

    def _error(self) -> str | None:
        """How the cell ended: the runner's word, or the kernel's reply if the runner said nothing."""
        if self.ended is not None:
            error = self.ended.get("error")
            return error if error is None or type(error) is str else "the cell's report could not be read"
        reply = self.reply if isinstance(self.reply, dict) else {}
        if reply.get("status") == "ok":
            return None
        return f"{reply.get('ename')}: {reply.get('evalue')}"

    def _status(self) -> int | None:
        """The kernel's exit status, None while it runs."""
        return self.process.poll() if self.process is not None else None

    async def _stop(self) -> None:
        """Kill the kernel and whatever it started (its process group, and on Linux every descendant and every
        process with its token), stop the client; never raises."""
        for task in asyncio.all_tasks():  # nbclient's pollers of a cell that timed out
            if task is not asyncio.current_task():
                task.cancel()
        with contextlib.suppress(Exception):
            alive = self.process is not None and self.process.poll() is None  # not reaped: its number is its own
            if sys.platform.startswith("linux"):
                _kill_all(self.process.pid if alive and self.process is not None else None, self.token)
        if self.pgid is not None:  # once: the group's number may be another's later
            with contextlib.suppress(OSError):
                os.killpg(self.pgid, 9)
            self.pgid = None
        with contextlib.suppress(Exception):
            if self.process is not None:
                self.process.wait(timeout=5)  # at once (jupyter_client would poll every 0.1 s)
        self.orphans.sweep(self.token)  # what the kernel left when it died first (its orphans are the grader's now)
        with contextlib.suppress(Exception):
            if self.km.has_kernel:  # jupyter_client's own kill and clean-up (a kernel it started but we did not see)
                await self.km.shutdown_kernel(now=True)
        with contextlib.suppress(Exception):
            if self.client.kc is not None:
                self.client.kc.stop_channels()
        with contextlib.suppress(Exception):
            await ensure_async(self.km.cleanup_resources())


async def run(path: Path, cells: list[tuple[int, str]], tally: Any, job: dict) -> None:
    """Run ``cells`` of the notebook at ``path`` in one new kernel (see :class:`Kernel`)."""
    with tempfile.TemporaryDirectory(prefix="llmcourse-grade-") as workdir:
        await Kernel(path, tally, job, workdir).run(cells)
