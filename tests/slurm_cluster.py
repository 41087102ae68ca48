"""A real single-host Slurm cluster for the tests marked ``slurm`` (the session fixture ``slurm_cluster`` in
``conftest.py`` starts one; imported as ``slurm_cluster`` like ``helpers``).

:meth:`SlurmCluster.start` installs Debian's ``slurm-wlm`` + ``munge`` when they are missing, starts a munged
of its own (own key and socket; the system's munge setup is not touched, and a munged started by another
test session cannot be stopped under this cluster), writes a ``slurm.conf`` whose state, spool, log and pid
files live in the given work directory, starts ``slurmctld`` and ``slurmd`` in the foreground as child
processes (their pids are kept; :meth:`SlurmCluster.stop` ends exactly those) and waits until the node is
idle. Two partitions share the node: the default one (:data:`PARTITION`) and :data:`HIGH_PARTITION`, whose
jobs preempt the default one's (``PreemptType=preempt/partition_prio``, ``PreemptMode=REQUEUE``,
``GraceTime`` of :data:`GRACE_TIME` s: SIGCONT + SIGTERM to the tasks, SIGKILL and a requeue after it). The
daemons listen on free ports picked at start, so a system Slurm or a second test cluster on the
host does not collide. Commands talk to this cluster through ``SLURM_CONF`` (:meth:`SlurmCluster.env`):
with it exported, plain ``sbatch``/``srun``/``squeue``/``scontrol`` work.

Job states: there is no accounting database (``sacct`` needs slurmdbd), so a job's state comes from
``scontrol show job`` while slurmctld still holds the record (``MinJobAge=4``: a few seconds to a minute
after the end) and from the job-completion log afterwards (``JobCompType=jobcomp/filetxt``, one line per
ended run in ``<workdir>/jobcomp.txt``; a requeued job has a line per run, the last one counts).

Needs root (slurmd runs the jobs as their user, apt-get installs); without it, or when the packages cannot
be installed, :class:`SlurmUnavailable` is raised and the fixture skips (fails under CI)."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: states in which a job has ended (for good, unless it is requeued)
FINAL_STATES = (
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
)
PACKAGES = ("slurm-wlm", "munge")
#: the executables the cluster needs (``munge``/``unmunge`` test the munge daemon)
EXECUTABLES = ("sbatch", "srun", "scontrol", "sinfo", "slurmctld", "slurmd", "munged", "munge", "unmunge")
PATH_SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/local/sbin", "/usr/sbin", "/sbin"])
PARTITION = "debug"
#: the partition whose jobs preempt those of :data:`PARTITION` (partition-priority preemption, see the conf)
HIGH_PARTITION = "high"
#: seconds between SIGTERM and SIGKILL for a preempted job of :data:`PARTITION`
GRACE_TIME = 30
#: values of the CI environment variable that mean "running in CI" (there a missing Slurm is a failure)
CI_TRUE = ("1", "true", "yes")


class SlurmUnavailable(RuntimeError):
    """This machine cannot run the test cluster (not root, packages not installable); the message says why."""


@dataclass(frozen=True)
class JobStatus:
    """A job's state as Slurm reports it; ``exit_code``/``signal`` are the batch script's (``ExitCode=3:0``),
    ``restarts`` how often it was requeued, ``source`` where this was read (``scontrol`` or ``jobcomp``)."""

    job_id: int
    state: str
    exit_code: int | None
    signal: int | None
    restarts: int | None
    reason: str | None
    source: str
    fields: Mapping[str, str] = field(repr=False, default_factory=dict)


class JobStateError(AssertionError):
    """A job ended in a state other than the expected ones, or did not reach them in time."""


def _which(name: str) -> str | None:
    return shutil.which(name, path=PATH_SBIN)


def _run(cmd: Sequence[str], *, timeout: float = 60, check: bool = True, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, **kw)
    if check and proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} exited with {proc.returncode}:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
        )
    return proc


def _fields(line: str) -> dict[str, str]:
    """``Key=value`` tokens of a one-line ``scontrol show -o`` / jobcomp record (values without spaces)."""
    return dict(m.groups() for m in re.finditer(r"(?:^|\s)([A-Za-z_:]+)=(\S*)", line))


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def ensure_packages() -> None:
    """Install ``slurm-wlm`` and ``munge`` with apt-get when an executable is missing (``apt-get update``
    only if the first install fails)."""
    missing = [e for e in EXECUTABLES if _which(e) is None]
    if not missing:
        return
    if _which("apt-get") is None:
        raise SlurmUnavailable(
            f"Slurm is not installed ({', '.join(missing)} missing) and there is no apt-get"
        )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", *PACKAGES]
    proc = _run(install, env=env, check=False, timeout=900)
    if proc.returncode != 0:
        _run(["apt-get", "update"], env=env, check=False, timeout=900)
        proc = _run(install, env=env, check=False, timeout=900)
    still = [e for e in EXECUTABLES if _which(e) is None]
    if proc.returncode != 0 or still:
        raise SlurmUnavailable(
            f"`{' '.join(install)}` failed (exit {proc.returncode}; missing: {', '.join(still) or 'none'}):\n"
            f"{proc.stdout[-1500:]}{proc.stderr[-1500:]}"
        )


def munge_works(socket_path: Path | str | None = None) -> bool:
    """True when ``munge -n | unmunge`` succeeds, i.e. a munge daemon answers on ``socket_path`` (default:
    the system's socket)."""
    if _which("munge") is None or _which("unmunge") is None:
        return False
    sock = ["--socket", str(socket_path)] if socket_path else []
    try:
        cred = subprocess.run(["munge", "-n", *sock], capture_output=True, timeout=10)
        if cred.returncode != 0:
            return False
        unmunge = subprocess.run(["unmunge", *sock], input=cred.stdout, capture_output=True, timeout=10)
        return unmunge.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def node_hardware() -> dict[str, str]:
    """This machine as a slurm.conf node line wants it (``slurmd -C``: CPUs, sockets, cores, threads,
    RealMemory in MB); falls back to ``os.cpu_count()`` and ``/proc/meminfo``."""
    slurmd = _which("slurmd")
    if slurmd is not None:
        proc = _run([slurmd, "-C"], check=False)
        first = proc.stdout.splitlines()[0] if proc.returncode == 0 and proc.stdout else ""
        hw = {k: v for k, v in _fields(first).items() if k != "NodeName"}
        if "CPUs" in hw and "RealMemory" in hw:
            return hw
    kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
    return {"CPUs": str(os.cpu_count() or 1), "RealMemory": str(kb // 1024)}


@dataclass
class SlurmCluster:
    """A running single-host cluster; build it with :meth:`start`, end it with :meth:`stop`."""

    workdir: Path
    conf: Path
    node: str
    #: short directory under /tmp (mode 0755, munged insists on it) for munged's socket and key, and
    #: slurmd's spool when the work directory's path is too long for unix sockets; removed by stop()
    rundir: Path
    pids: dict[str, int] = field(default_factory=dict)
    _procs: dict[str, subprocess.Popen] = field(default_factory=dict, repr=False)

    # ---------------------------------------------------------------- start / stop
    @classmethod
    def start(cls, workdir: Path | str, *, timeout: float = 90.0) -> SlurmCluster:
        """Install what is missing, start munged (if needed), slurmctld and slurmd; return once the node is
        idle. Raises :class:`SlurmUnavailable` when this machine cannot run Slurm, ``RuntimeError`` when a
        daemon does not come up (with its log)."""
        if os.geteuid() != 0:
            raise SlurmUnavailable("the test Slurm cluster needs root (slurmd runs the jobs, apt-get)")
        ensure_packages()
        workdir = Path(workdir).absolute()
        workdir.mkdir(parents=True, exist_ok=True)
        node = socket.gethostname().split(".")[0]
        rundir = Path(tempfile.mkdtemp(prefix="slurm-test-"))
        rundir.chmod(0o755)
        cluster = cls(workdir=workdir, conf=workdir / "slurm.conf", node=node, rundir=rundir)
        (workdir / "log").mkdir(exist_ok=True)
        try:
            cluster._start_munge()
            cluster._write_conf()
            cluster._spawn("slurmctld", [_which("slurmctld"), "-D", "-f", str(cluster.conf)])
            cluster._wait(
                lambda: cluster.run("scontrol", "ping", check=False).returncode == 0, timeout, "slurmctld"
            )
            cluster._spawn("slurmd", [_which("slurmd"), "-D", "-f", str(cluster.conf)])
            cluster._wait(lambda: cluster.node_state() == "idle", timeout, "slurmd / node idle")
        except BaseException:
            cluster.stop()
            raise
        atexit.register(cluster.stop)  # also when the interpreter ends without the fixture's teardown
        return cluster

    def stop(self, timeout: float = 30.0) -> None:
        """Cancel the cluster's jobs, then end the daemons this object started (SIGTERM by pid, SIGKILL
        after ``timeout``) and wait for them: slurmd, slurmctld, then the cluster's own munged."""
        if self.pids.get("slurmctld") and self._alive("slurmctld"):
            for partition in (PARTITION, HIGH_PARTITION):
                self.run("scancel", "--partition", partition, check=False)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                q = self.run("squeue", "-h", "-o", "%i", check=False)
                if q.returncode != 0 or not q.stdout.strip():
                    break
                time.sleep(0.5)
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self._procs.get(name)
            if proc is None:
                continue
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)
            self._procs.pop(name)
        shutil.rmtree(self.rundir, ignore_errors=True)

    # ---------------------------------------------------------------- commands
    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The current environment with ``SLURM_CONF`` pointing at this cluster (inherited ``SLURM_*``
        variables of an enclosing job removed), plus ``extra``."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env["SLURM_CONF"] = str(self.conf)
        env["PATH"] = PATH_SBIN
        env.update(extra or {})
        return env

    def run(self, *cmd: str, check: bool = True, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
        """Run a Slurm command (``squeue``, ``scontrol``, ...) against this cluster, output captured."""
        kw.setdefault("env", self.env())
        return _run(cmd, check=check, timeout=timeout, **kw)

    def sbatch(
        self,
        script: Path | str,
        *args: str,
        env: Mapping[str, str] | None = None,
        wait: bool = False,
        cwd: Path | str | None = None,
        timeout: float = 300,
    ) -> int:
        """Submit ``script`` (a file, or the script's text when it starts with ``#!``) with the sbatch
        options ``args``; ``env`` adds variables to :meth:`env` (sbatch exports the environment to the job).
        ``wait=True`` is ``sbatch --wait``: returns when the job has ended (whatever its exit code).
        Returns the job id."""
        text = isinstance(script, str) and script.startswith("#!")
        cmd = ["sbatch", "--parsable", *(["--wait"] if wait else []), *args, *([] if text else [str(script)])]
        proc = self.run(
            *cmd, check=False, timeout=timeout, env=self.env(env), cwd=cwd, input=script if text else None
        )
        m = re.match(r"\s*(\d+)", proc.stdout)
        if m is None or (proc.returncode != 0 and not wait):
            raise RuntimeError(f"sbatch failed (exit {proc.returncode}): {proc.stdout}{proc.stderr}")
        return int(m.group(1))

    def requeue(self, job_id: int) -> None:
        """``scontrol requeue JOBID``: the running batch job is killed and queued again."""
        self.run("scontrol", "requeue", str(job_id))

    # ---------------------------------------------------------------- states
    def job_status(self, job_id: int) -> JobStatus | None:
        """The job's status from slurmctld, or from the job-completion log once slurmctld dropped the job
        (``None`` if neither knows it). ``RuntimeError`` if scontrol fails otherwise."""
        proc = self.run("scontrol", "show", "job", "-o", str(job_id), check=False)
        if proc.returncode == 0 and proc.stdout.startswith("JobId="):
            return self._status(job_id, _fields(proc.stdout.splitlines()[0]), "scontrol")
        if "invalid job id" not in (proc.stdout + proc.stderr).lower():
            raise RuntimeError(f"scontrol show job {job_id} failed: {proc.stdout}{proc.stderr}")
        records = [f for f in map(_fields, self._jobcomp_lines()) if f.get("JobId") == str(job_id)]
        return self._status(job_id, records[-1], "jobcomp") if records else None

    def job_state(self, job_id: int) -> str | None:
        """The job's state (``PENDING``, ``RUNNING``, ``COMPLETED``, ``FAILED``, ...), ``None`` if unknown."""
        status = self.job_status(job_id)
        return status.state if status else None

    def wait_for(
        self, job_id: int, states: Sequence[str] = FINAL_STATES, timeout: float = 120, poll: float = 0.3
    ) -> JobStatus:
        """Poll until the job is in one of ``states``; returns its status. Raises :class:`JobStateError`
        when it ends in another final state (not requeued) or after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        status: JobStatus | RuntimeError | None = None
        while True:
            try:
                status = self.job_status(job_id)
            except RuntimeError as e:  # slurmctld did not answer in time: ask again
                status = e
            if isinstance(status, JobStatus) and status.state in states:
                return status
            if isinstance(status, JobStatus) and status.state in FINAL_STATES:
                raise JobStateError(f"job {job_id} ended {status}, expected one of {list(states)}")
            if time.monotonic() > deadline:
                raise JobStateError(f"job {job_id} not in {list(states)} after {timeout} s: {status}")
            time.sleep(poll)

    def node_state(self) -> str | None:
        proc = self.run("sinfo", "-h", "-N", "-n", self.node, "-o", "%T", check=False)
        states = set(proc.stdout.split()) if proc.returncode == 0 else set()  # one line per partition
        return states.pop() if len(states) == 1 else None

    # ---------------------------------------------------------------- internals
    @staticmethod
    def _status(job_id: int, f: Mapping[str, str], source: str) -> JobStatus:
        code, _, sig = f.get("ExitCode", "").partition(":")
        restarts = f.get("Restarts")
        return JobStatus(
            job_id=job_id,
            state=f.get("JobState", "UNKNOWN"),
            exit_code=int(code) if code.isdigit() else None,
            signal=int(sig) if sig.isdigit() else None,
            restarts=int(restarts) if restarts and restarts.isdigit() else None,
            reason=f.get("Reason"),
            source=source,
            fields=dict(f),
        )

    def _jobcomp_lines(self) -> list[str]:
        try:
            return (self.workdir / "jobcomp.txt").read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return []

    def _alive(self, name: str) -> bool:
        proc = self._procs.get(name)
        return proc is not None and proc.poll() is None

    def _spawn(self, name: str, cmd: Sequence[str], **kw) -> None:
        with open(self.workdir / "log" / f"{name}.out", "ab") as log:  # the child keeps its own descriptor
            proc = subprocess.Popen(
                list(cmd),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=self.env(),
                **kw,
            )
        self._procs[name] = proc
        self.pids[name] = proc.pid

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            dead = [n for n in self._procs if not self._alive(n)]
            if dead or time.monotonic() > deadline:
                why = f"{', '.join(dead)} exited" if dead else f"not ready after {timeout} s"
                logs = "\n".join(
                    f"--- {p.name}\n{_tail(p)}"
                    for p in sorted((self.workdir / "log").iterdir())
                    if p.is_file()
                )
                raise RuntimeError(f"test Slurm cluster: waiting for {what}: {why}\n{logs}")
            time.sleep(0.2)

    def _start_munge(self) -> None:
        """A private munged (as root, with its own key and socket in :attr:`rundir`): the system's munge
        setup is left alone, and a munged another test session started cannot vanish under this cluster."""
        key = self.rundir / "munge.key"
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(128))  # what mungekey --create writes: 1024 random bits
        sock = self.rundir / "munge.sock"
        self._spawn(
            "munged",
            [
                _which("munged"),
                "--foreground",
                "--socket",
                str(sock),
                "--key-file",
                str(key),
                "--pid-file",
                str(self.rundir / "munged.pid"),
                "--seed-file",
                str(self.rundir / "munged.seed"),
                "--log-file",
                str(self.workdir / "log" / "munged.log"),
            ],
        )
        self._wait(lambda: munge_works(sock), 20, "munged")

    def _write_conf(self) -> None:
        w = self.workdir
        (w / "state").mkdir(exist_ok=True)
        spool = w / "spool"
        if len(str(spool)) > 60:  # slurmstepd's unix sockets live here; sun_path holds 108 bytes
            spool = self.rundir / "spool"
        spool.mkdir(exist_ok=True)
        ctld_port, slurmd_port = _free_ports(2)
        hw = " ".join(f"{k}={v}" for k, v in node_hardware().items())
        partition = f"Nodes={self.node} MaxTime=INFINITE State=UP"
        self.conf.write_text(
            f"""\
# single-host test cluster written by tests/slurm_cluster.py
ClusterName=macaron-test
# addresses given: the host name need not resolve
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# the cluster's own munged; a requeued job waits cred_expire seconds before it may start again (default 120)
AuthInfo=socket={self.rundir / "munge.sock"},cred_expire=5
StateSaveLocation={w / "state"}
SlurmdSpoolDir={spool}
SlurmctldPidFile={w / "slurmctld.pid"}
SlurmdPidFile={w / "slurmd.pid"}
SlurmctldLogFile={w / "log" / "slurmctld.log"}
SlurmdLogFile={w / "log" / "slurmd.log"}
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
# the periodic scheduler starts jobs that became eligible later (a requeued job) within ~2 s, not 30-60 s
SchedulerParameters=sched_interval=2,bf_interval=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={w / "jobcomp.txt"}
JobRequeue=1
ReturnToService=2
KillWait=2
# sbatch --wait polls every 2 s only while 2 < MinJobAge/2 fails (else 2, 8, 32 s); ended jobs leave
# slurmctld's memory soon after, their final state stays in the job-completion log
MinJobAge=4
InactiveLimit=0
Waittime=0
SlurmctldTimeout=30
SlurmdTimeout=30
MessageTimeout=10
NodeName={self.node} NodeAddr=127.0.0.1 {hw} State=UNKNOWN
# partition-priority preemption: a job of the high partition that needs the CPUs preempts jobs of the default
# one (SIGCONT + SIGTERM, SIGKILL after GraceTime, then requeued: PreemptMode=REQUEUE)
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
PartitionName={PARTITION} {partition} PriorityTier=1 GraceTime={GRACE_TIME} PreemptMode=REQUEUE Default=YES
PartitionName={HIGH_PARTITION} {partition} PriorityTier=10 PreemptMode=OFF
"""
        )


def start_for_tests(workdir: Path) -> SlurmCluster:
    """:meth:`SlurmCluster.start` for the session fixture: when this machine cannot run Slurm the tests
    are skipped with the reason, except in CI (``CI=true``), where that fails them."""
    import pytest

    try:
        return SlurmCluster.start(workdir)
    except SlurmUnavailable as e:
        if os.environ.get("CI", "").strip().lower() in CI_TRUE:
            pytest.fail(f"CI runs the slurm tests, but this machine cannot run Slurm: {e}", pytrace=False)
        pytest.skip(f"cannot run a Slurm cluster here: {e}")
