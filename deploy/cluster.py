"""A hosted cluster on one machine: N Streamlit replicas in hosted mode behind Debian's nginx, started and stopped
with one command each (docs/DEPLOYMENT.md "A cluster behind nginx").

    python -m deploy.cluster start --replicas 2        # make hosted-cluster REPLICAS=2
    python -m deploy.cluster stop                      # make hosted-cluster-stop
    python -m deploy.cluster run --replicas 2          # the same in the foreground: Ctrl+C stops everything

What ``start`` does, in order:

1. prepares the bundled models once (``python -m inspector prepare``: each GGUF checked and converted into
   ``~/.cache/attention-inspector``); every replica then reads the same prepared folders and loads its own copy;
2. starts N ``streamlit run app.py`` replicas on loopback ports, each in its own process group, with
   ``INSPECTOR_HOSTED=1`` and every other ``INSPECTOR_*`` variable of the environment (allow-list, parameter cap,
   memory budget, deadline, the run queue's cap), a cookie secret shared by all of them, and
   ``OMP_NUM_THREADS`` = cores ÷ replicas so the replicas' forwards do not fight over the cores;
3. waits until every replica answers ``/_stcore/health`` (nginx OSS has no active health checks);
4. writes ``nginx.conf`` from ``deploy/nginx.conf.template`` into the run folder (default ``.cluster/``) and starts
   nginx in the foreground of its own process group (``daemon off``), its pid file, logs and temp files in the
   run folder;
5. records every process group in ``cluster.json`` there, which ``stop`` reads: SIGTERM to each group, SIGKILL to
   what is left after a grace period, then a check that no process of those groups remains.

Everything listens on 127.0.0.1; put a TLS-terminating proxy or the host's nginx in front for a public address.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = Path(__file__).resolve().parent / "nginx.conf.template"
DEFAULT_RUN_DIR = REPO_ROOT / ".cluster"
DEFAULT_PORT = 8620
NGINX_CANDIDATES = ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx")
# A replica that refuses a connection is left out for this long, then tried again.
FAIL_TIMEOUT_S = 10
START_TIMEOUT_S = 180.0
STOP_GRACE_S = 10.0
# The flags of `make hosted`: visitors see no exception text and no developer menu; no file watcher in production.
STREAMLIT_FLAGS = ("--server.headless", "true", "--browser.gatherUsageStats", "false",
                   "--client.showErrorDetails", "none", "--client.toolbarMode", "viewer",
                   "--server.fileWatcherType", "none")


class ClusterError(RuntimeError):
    """The cluster could not start or stop; the message says what, why and what to do."""


@dataclass
class Member:
    """One process group of the cluster: a replica (``port`` = its own) or nginx (``port`` = the public one)."""

    name: str
    pid: int
    port: int
    log: str


@dataclass
class Cluster:
    """A started cluster: its public URL, its members and the run folder that holds their config and logs."""

    run_dir: Path
    port: int
    replicas: list[Member] = field(default_factory=list)
    nginx: Member | None = None
    _children: dict[int, subprocess.Popen] = field(default_factory=dict, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def replica_url(self, index: int) -> str:
        return f"http://127.0.0.1:{self.replicas[index].port}"

    @property
    def members(self) -> list[Member]:
        return [*self.replicas, *([self.nginx] if self.nginx else [])]

    def save(self) -> None:
        state = {"port": self.port, "replicas": [asdict(m) for m in self.replicas],
                 "nginx": asdict(self.nginx) if self.nginx else None}
        (self.run_dir / "cluster.json").write_text(json.dumps(state, indent=2) + "\n")

    @classmethod
    def load(cls, run_dir: Path) -> Cluster:
        try:
            state = json.loads((run_dir / "cluster.json").read_text())
        except (OSError, ValueError) as err:
            raise ClusterError(f"no cluster is recorded in {run_dir} ({err}); nothing to stop — start one with "
                               "`make hosted-cluster`") from err
        return cls(run_dir=run_dir, port=state["port"], replicas=[Member(**m) for m in state["replicas"]],
                   nginx=Member(**state["nginx"]) if state.get("nginx") else None)

    def kill_replica(self, index: int) -> None:
        """Kill replica ``index`` at once (SIGKILL to its process group), as a crash would: the failover drill."""
        member = self.replicas[index]
        _signal_group(member.pid, signal.SIGKILL)
        _reap(self._children.get(member.pid), 5.0)

    def stop(self) -> list[int]:
        """Stop every member (nginx first, so no request reaches a replica that is going away) and return the pids
        of any process of their groups still running afterwards (empty: none left behind)."""
        members = [*([self.nginx] if self.nginx else []), *self.replicas]
        for member in members:
            _signal_group(member.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for member in members:
            _reap(self._children.get(member.pid), max(0.0, deadline - time.monotonic()))
            while _group_alive(member.pid) and time.monotonic() < deadline:
                time.sleep(0.1)
        for member in members:
            if _group_alive(member.pid):
                _signal_group(member.pid, signal.SIGKILL)
                _reap(self._children.get(member.pid), 5.0)
        deadline = time.monotonic() + 5.0  # a killed process can take a moment to release its memory and exit
        while any(_group_alive(m.pid) for m in members) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [pid for member in members for pid in group_processes(member.pid)]
        if not left:
            (self.run_dir / "cluster.json").unlink(missing_ok=True)
        return left

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def find_nginx() -> str:
    found = shutil.which("nginx") or next((p for p in NGINX_CANDIDATES if Path(p).exists()), None)
    if not found:
        raise ClusterError("nginx is not installed, and the cluster runs behind it; install Debian's package "
                           "(apt-get install nginx) and start again")
    return found


def render_config(template: str, *, run_dir: Path, port: int, replica_ports: list[int],
                  fail_timeout_s: int = FAIL_TIMEOUT_S) -> str:
    """``template`` with its ``{{FIELDS}}`` filled; raises ClusterError if one is left unfilled."""
    from inspector.serving.balancer import HEADER_BUFFER_BYTES, balancer_pages

    pages = balancer_pages()
    servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=1 fail_timeout={fail_timeout_s}s;"
                        for p in replica_ports)
    fields = {"RUN_DIR": str(run_dir), "PORT": str(port), "SERVERS": servers, "REPLICAS": str(len(replica_ports)),
              "FAIL_TIMEOUT_S": str(fail_timeout_s),
              "HEADER_BUFFER_KB": str(HEADER_BUFFER_BYTES // 1024), "TOO_LONG": pages.too_long,
              "UNAVAILABLE": pages.unavailable}
    text = template
    for name, value in fields.items():
        text = text.replace("{{" + name + "}}", value)
    if "{{" in text:
        start = text.index("{{")
        raise ClusterError(f"the nginx template leaves {text[start:text.index('}}', start) + 2]} unfilled; "
                           "deploy/cluster.py fills only " + ", ".join(fields))
    return text


def replica_command(port: int) -> list[str]:
    return [sys.executable, "-m", "streamlit", "run", str(REPO_ROOT / "app.py"), "--server.port", str(port),
            "--server.address", "127.0.0.1", *STREAMLIT_FLAGS]


def replica_env(name: str, cookie_secret: str, threads: int, environ: dict[str, str] | None = None) -> dict[str, str]:
    """A replica's environment: this one's, plus hosted mode (the operator's other ``INSPECTOR_*`` settings pass
    through unchanged), a cookie secret shared by every replica, its name, and its share of the cores."""
    env = dict(os.environ if environ is None else environ)
    env.update(INSPECTOR_HOSTED="1", INSPECTOR_REPLICA=name, STREAMLIT_SERVER_COOKIE_SECRET=cookie_secret,
               OMP_NUM_THREADS=str(threads), PYTHONUNBUFFERED="1")
    return env


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


def wait_healthy(cluster: Cluster, urls: dict[str, str], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    pending = dict(urls)
    while pending:
        for name, url in list(pending.items()):
            member = next(m for m in cluster.members if m.name == name)
            child = cluster._children.get(member.pid)
            if child is not None and child.poll() is not None:
                raise ClusterError(f"{name} exited with code {child.returncode} while starting; its log "
                                   f"({member.log}) ends:\n{_tail(Path(member.log))}")
            if _healthy(url):
                del pending[name]
        if pending and time.monotonic() > deadline:
            raise ClusterError(f"{', '.join(pending)} did not answer /_stcore/health within {timeout_s:g} s; see "
                               f"the logs in {cluster.run_dir}")
        time.sleep(0.2)


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def start(replicas: int = 2, port: int = DEFAULT_PORT, replica_ports: list[int] | None = None,
          run_dir: Path = DEFAULT_RUN_DIR, prepare: bool = True, environ: dict[str, str] | None = None,
          timeout_s: float = START_TIMEOUT_S) -> Cluster:
    """Start the cluster (see the module docstring) and return it once nginx answers; on any failure, stop what
    had started and raise :class:`ClusterError`."""
    if replicas < 1:
        raise ClusterError(f"--replicas {replicas}: a cluster needs at least one replica")
    replica_ports = replica_ports or [port + 1 + i for i in range(replicas)]
    if len(replica_ports) != replicas:
        raise ClusterError(f"{replicas} replicas need {replicas} ports, got {replica_ports}")
    nginx = find_nginx()
    run_dir = Path(run_dir).resolve()
    if (run_dir / "cluster.json").exists():
        old = Cluster.load(run_dir)
        if any(_group_alive(m.pid) for m in old.members):
            raise ClusterError(f"a cluster recorded in {run_dir} is still running ({old.url}); stop it first "
                               "(make hosted-cluster-stop)")
    for sub in ("logs", "tmp"):
        (run_dir / sub).mkdir(parents=True, exist_ok=True)
    base_env = dict(os.environ if environ is None else environ)
    if prepare:
        done = subprocess.run([sys.executable, "-m", "inspector", "prepare"], cwd=REPO_ROOT, env=base_env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise ClusterError(f"preparing the bundled models failed (python -m inspector prepare, exit "
                               f"{done.returncode}):\n{(done.stdout + done.stderr)[-2000:]}")
    cluster = Cluster(run_dir=run_dir, port=port)
    secret = secrets.token_hex(32)
    threads = max(1, (os.cpu_count() or 1) // replicas)
    try:
        for index, replica_port in enumerate(replica_ports):
            name = f"replica-{index + 1}"
            log_path = run_dir / "logs" / f"{name}.log"
            with log_path.open("w") as log:
                child = subprocess.Popen(replica_command(replica_port), cwd=REPO_ROOT, stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=replica_env(name, secret, threads, base_env), start_new_session=True)
            cluster._children[child.pid] = child
            cluster.replicas.append(Member(name, child.pid, replica_port, str(log_path)))
            cluster.save()
        wait_healthy(cluster, {m.name: f"http://127.0.0.1:{m.port}" for m in cluster.replicas}, timeout_s)
        config = run_dir / "nginx.conf"
        config.write_text(render_config(TEMPLATE.read_text(), run_dir=run_dir, port=port, replica_ports=replica_ports))
        log_path = run_dir / "logs" / "nginx.log"
        checked = subprocess.run([nginx, "-t", "-q", "-p", str(run_dir), "-c", str(config), "-e",
                                  str(run_dir / "nginx-error.log")], capture_output=True, text=True)
        if checked.returncode != 0:
            raise ClusterError(f"nginx refused {config}:\n{checked.stderr.strip()}")
        with log_path.open("w") as log:
            child = subprocess.Popen([nginx, "-p", str(run_dir), "-c", str(config), "-e",
                                      str(run_dir / "nginx-error.log")], stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        cluster._children[child.pid] = child
        cluster.nginx = Member("nginx", child.pid, port, str(log_path))
        cluster.save()
        wait_healthy(cluster, {"nginx": cluster.url}, 15.0)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def stop(run_dir: Path = DEFAULT_RUN_DIR) -> list[int]:
    """Stop the cluster recorded in ``run_dir``; the pids left running (empty: none)."""
    return Cluster.load(Path(run_dir).resolve()).stop()


# ------------------------------------------------------------------------------------------------ process groups


def group_processes(pgid: int) -> list[int]:
    """Pids of the running (not zombie) processes in process group ``pgid`` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # After the command name: state, ppid, pgrp, …
        if fields[0] != "Z" and int(fields[2]) == pgid:
            found.append(int(stat.parent.name))
    return found


def open_sockets(ports: list[int]) -> dict[int, int]:
    """Established TCP connections accepted on each of ``ports`` (IPv4 loopback, /proc/net/tcp) — for a replica,
    the WebSockets nginx holds open to it (HTTP requests close at once): which replica holds which sessions."""
    counts = dict.fromkeys(ports, 0)
    try:
        rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return counts
    for row in rows:
        fields = row.split()
        local_port, state = int(fields[1].split(":")[1], 16), fields[3]
        if state == "01" and local_port in counts:  # 01 = ESTABLISHED
            counts[local_port] += 1
    return counts


def _group_alive(pgid: int) -> bool:
    return bool(group_processes(pgid))


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(child: subprocess.Popen | None, timeout_s: float) -> None:
    if child is None:
        return
    try:
        child.wait(timeout=max(timeout_s, 0.01))
    except subprocess.TimeoutExpired:
        pass


# ------------------------------------------------------------------------------------------------ command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.cluster", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for name, help_ in (("start", "start the cluster in the background and return"),
                        ("run", "start the cluster and stay in the foreground; Ctrl+C stops it")):
        sub = commands.add_parser(name, help=help_)
        sub.add_argument("--replicas", type=int, default=2, help="number of Streamlit replicas (default 2)")
        sub.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"nginx's port (default {DEFAULT_PORT})")
        sub.add_argument("--replica-ports", type=int, nargs="+",
                         help="the replicas' ports (default: the N ports after --port)")
        sub.add_argument("--run-dir", type=Path, default=DEFAULT_RUN_DIR, help="config, logs and pid files")
        sub.add_argument("--no-prepare", action="store_true", help="skip `python -m inspector prepare`")
    sub = commands.add_parser("stop", help="stop the cluster recorded in the run folder")
    sub.add_argument("--run-dir", type=Path, default=DEFAULT_RUN_DIR)
    args = parser.parse_args(argv)
    try:
        if args.command == "stop":
            left = stop(args.run_dir)
            if left:
                print(f"still running after SIGKILL: pids {left}", file=sys.stderr)
                return 1
            print("cluster stopped; no process left")
            return 0
        cluster = start(args.replicas, args.port, args.replica_ports, args.run_dir, prepare=not args.no_prepare)
    except ClusterError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    ports = ", ".join(str(m.port) for m in cluster.replicas)
    print(f"{len(cluster.replicas)} replicas (ports {ports}) behind nginx: {cluster.url}\n"
          f"logs and config: {cluster.run_dir}")
    if args.command == "start":
        print("stop with: make hosted-cluster-stop (python -m deploy.cluster stop)")
        return 0
    print("Ctrl+C stops the cluster")
    try:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        while all(_group_alive(m.pid) for m in cluster.members if m.name == "nginx"):
            time.sleep(1)
        print("nginx exited; stopping the replicas", file=sys.stderr)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        left = cluster.stop()
    print("cluster stopped; no process left" if not left else f"still running: {left}")
    return 0 if not left else 1


if __name__ == "__main__":
    sys.exit(main())
