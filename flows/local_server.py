"""A local Prefect server that ``ppdp`` keeps running between runs (``ppdp server start|stop|status``).

Without one, every ``ppdp run``, ``tune``, ``compare`` and ``federate`` starts a temporary Prefect server (a uvicorn
child process, :func:`start_temporary`: as soon as the spec checks pass, while the command imports its libraries)
and stops it at exit: about 1 s of a run (it was 10-17 s while Prefect started it when the flow began and its log
flush waited 5 s at exit). ``ppdp server start`` starts ``prefect server start``
once, in the background (its own session: a terminal's Ctrl-C does not reach it), bound to 127.0.0.1 on a free port,
with its own ``PREFECT_HOME`` under ppdp's config folder (``<config>/prefect-server/``, mode 0700: its SQLite
database holds flow-run parameters, which are file paths, and ppdp's log lines, which hold no data values) and the
data-safety settings of :mod:`ppdp.flows.settings` in its environment. Its URL and pid go to a state file
(``<config>/prefect-server/server.json``). Every later command that runs a flow calls :func:`use_local_server`
first: when the state file names a server that answers its health check, ``PREFECT_API_URL`` is set to it for this
process (and the Dask workers it starts), so no temporary server is started. A state file whose server is gone is
ignored (the run starts its temporary server, as without one). A ``PREFECT_API_URL`` that the user set (in the
environment or the active Prefect profile) always wins.

``ppdp run`` does not start the server on first use: a process that outlives the command would surprise a user
(and a CI job, whose runner waits for it or kills it). ``ppdp server start`` is explicit.

Imports neither Prefect nor any numerical package (``ppdp server status`` and the check in ``ppdp run`` stay
quick); the server itself is ``python -m prefect server start`` of this interpreter.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ppdp.flows import settings
from ppdp.tasks.core.errors import PpdpError
from ppdp.tasks.keys import config_dir

FOLDER = "prefect-server"
STATE = "server.json"
LOG = "server.log"
START_TIMEOUT = 90.0  # seconds until the server must answer (3-17 s seen on a 2-core machine, idle to loaded)
STOP_TIMEOUT = 20.0
SERVER_ENV = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
}


class ServerError(PpdpError):
    """``ppdp server`` could not do what it was asked (one line; exit 1)."""

    exit_code = 1


@dataclass(frozen=True)
class ServerState:
    url: str  # the API URL (``http://127.0.0.1:PORT/api``)
    pid: int
    home: str  # its PREFECT_HOME
    started_at: str


def home() -> Path:
    """The server's ``PREFECT_HOME`` (and the folder of its state file and log)."""
    return config_dir() / FOLDER


def state_path() -> Path:
    return home() / STATE


def read_state() -> ServerState | None:
    """The state file's server, or None (no file, or one that cannot be read: treated as none)."""
    try:
        data = json.loads(state_path().read_text(encoding="utf-8"))
        return ServerState(url=str(data["url"]), pid=int(data["pid"]), home=str(data["home"]),
                           started_at=str(data["started_at"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def healthy(url: str, timeout: float = 2.0) -> bool:
    """Whether the Prefect API at ``url`` answers its health check (loopback only: ``url`` is ours)."""
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout) as r:  # noqa: S310 - our own loopback URL
            return r.read().strip() == b"true"
    except (OSError, ValueError):
        return False


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a running Prefect server (not a reused pid: on Linux its command line is checked)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # not ours
    cmdline = Path(f"/proc/{pid}/cmdline")
    if cmdline.exists():
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            return False
        if b"prefect" not in b" ".join(argv) or b"server" not in argv:
            return False
        try:  # a zombie (exited, not yet reaped by its parent) is gone as far as we are concerned
            return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][:1] != "Z"
        except (OSError, IndexError):
            return True
    return True


def running() -> ServerState | None:
    """The state file's server if it is alive and answers; None otherwise (no file, or a stale one)."""
    state = read_state()
    if state is None or not _alive(state.pid) or not healthy(state.url):
        return None
    return state


def user_api_url() -> str | None:
    """A Prefect API URL the user chose: ``PREFECT_API_URL`` in the environment, else the active Prefect profile's
    (read without importing Prefect: ``$PREFECT_HOME/profiles.toml``)."""
    if os.environ.get("PREFECT_API_URL"):
        return os.environ["PREFECT_API_URL"]
    profiles = Path(os.environ.get("PREFECT_PROFILES_PATH")
                    or Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect") / "profiles.toml")
    if not profiles.is_file():
        return None
    try:
        data = tomllib.loads(profiles.read_text(encoding="utf-8"))
        active = os.environ.get("PREFECT_PROFILE") or data.get("active") or "ephemeral"
        url = data.get("profiles", {}).get(active, {}).get("PREFECT_API_URL")
    except (OSError, ValueError, AttributeError):
        return None
    return str(url) if url else None


def use_local_server() -> str | None:
    """Point this process at the running local server (``PREFECT_API_URL``), unless the user chose an API; the
    server's URL, or None when the command will use the user's API or a temporary server (no state file, or a
    stale one: no error). Call it before Prefect is imported."""
    if user_api_url() is not None:
        return None
    state = running()
    if state is None:
        return None
    os.environ["PREFECT_API_URL"] = state.url
    return state.url


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start(timeout: float = START_TIMEOUT) -> tuple[ServerState, bool]:
    """Start the local server unless it runs already; (its state, whether it was started now). Raises
    :class:`ServerError` when it does not answer within ``timeout`` seconds (the process is stopped again)."""
    current = running()
    if current is not None:
        return current, False
    folder = home()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    folder.chmod(0o700)
    state_path().unlink(missing_ok=True)  # a stale one
    port = _free_port()
    url = f"http://127.0.0.1:{port}/api"
    env = {**os.environ, **settings.FORCED, **SERVER_ENV, "PREFECT_HOME": str(folder)}
    for key, value in settings.DEFAULTS.items():
        env.setdefault(key, value)
    env.pop("PREFECT_API_URL", None)
    env.pop("PREFECT_PROFILES_PATH", None)  # its own home's profiles: never a profile pointing at another API
    env["PREFECT_PROFILE"] = "ephemeral"
    with open(folder / LOG, "ab") as log:
        proc = subprocess.Popen(  # noqa: S603 - this interpreter's prefect, fixed arguments
            [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port),
             "--analytics-off"],
            env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=folder,
            start_new_session=True)  # its own session: a terminal's Ctrl-C (the process group) does not reach it
    deadline = time.monotonic() + timeout
    while not healthy(url, timeout=1.0):
        if proc.poll() is not None or time.monotonic() > deadline:
            _terminate(proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            why = (f"exited with status {proc.returncode}" if proc.returncode is not None
                   else f"did not answer within {timeout:.0f} s")
            raise ServerError(f"the Prefect server {why}; its log: {folder / LOG}")
        time.sleep(0.25)
    state = ServerState(url=url, pid=proc.pid, home=str(folder), started_at=datetime.now(UTC).isoformat())
    tmp = state_path().with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(vars(state), fh, indent=2)
    os.replace(tmp, state_path())
    return state, True


def _terminate(pid: int, timeout: float = STOP_TIMEOUT) -> bool:
    """SIGTERM to the server's process group (its own session), SIGKILL after ``timeout``; whether it is gone."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # reaped here when this process started it (tests, benchmarks)
            if not _alive(pid):
                return True
            time.sleep(0.1)
    return not _alive(pid)


def stop() -> tuple[ServerState | None, bool]:
    """Stop the local server and remove its state file: (the state file's server or None, whether it was running).
    A stale state file is removed. Raises :class:`ServerError` when the process does not end."""
    state = read_state()
    if state is None:
        state_path().unlink(missing_ok=True)
        return None, False
    was = _alive(state.pid)
    if was and not _terminate(state.pid):
        raise ServerError(f"the Prefect server (pid {state.pid}) did not stop; state file kept: {state_path()}")
    state_path().unlink(missing_ok=True)
    return state, was


# -- a run's temporary server, started early ------------------------------------------------------------------
EPHEMERAL_ENV = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
PORT_IN_USE = 3  # uvicorn's exit status when its port was taken


@dataclass
class TemporaryServer:
    """A temporary Prefect server of this command (the names Prefect's own ``SubprocessASGIServer`` uses)."""

    server_process: subprocess.Popen
    port: int

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"


_TEMPORARY: list[TemporaryServer] = []


def temporary() -> TemporaryServer | None:
    """The temporary server this process started (:func:`start_temporary`), or None."""
    return _TEMPORARY[0] if _TEMPORARY else None


def _uvicorn(port: int) -> subprocess.Popen:
    """Prefect's temporary server: the command and environment of Prefect's ``SubprocessASGIServer`` (uvicorn
    serving ``prefect.server.api.server:create_app`` on the loopback interface, no UI), found without importing
    Prefect; it dies with this process (:func:`ppdp.flows.settings.popen_dying_with_parent`)."""
    spec = importlib.util.find_spec("prefect")
    if spec is None or spec.origin is None:
        raise ServerError("Prefect is not installed in this environment")
    app_dir = Path(spec.origin).parent.parent
    return settings.popen_dying_with_parent(
        subprocess.Popen,
        [sys.executable, "-m", "uvicorn", "--app-dir", str(app_dir), "--factory",
         "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port", str(port), "--log-level", "error",
         "--lifespan", "on"],
        env={**os.environ, **EPHEMERAL_ENV}, stdin=subprocess.DEVNULL)


def start_temporary() -> TemporaryServer | None:
    """Start the run's temporary Prefect server now, without waiting for it, and point this process (and the Dask
    workers it starts) at it: ``PREFECT_API_URL``. Called by a command that will run a flow, as soon as its spec
    checks passed, before Prefect and the numerical libraries are imported: the server (about 3 s to answer) starts
    while the command imports them and Great Expectations (:func:`ppdp.flows.cli.startup.server_ready`), instead
    of after, as Prefect's own temporary server did (and Prefect's server module, about 2 s to import, is not
    imported by the command). None, and nothing started, when an API is chosen already (the user's, or the local
    server of :func:`use_local_server`) or the user's settings forbid a temporary server. Stopped at exit
    (:func:`stop_temporary`)."""
    if _TEMPORARY:
        return _TEMPORARY[0]
    if user_api_url() is not None or _prefect_api_url() is not None:
        return None
    if os.environ.get("PREFECT_SERVER_ALLOW_EPHEMERAL_MODE", "").strip().lower() in ("0", "false", "no", "off"):
        return None
    port = _free_port()
    server = TemporaryServer(_uvicorn(port), port)
    _TEMPORARY.append(server)
    _point_at(server)
    atexit.register(stop_temporary)
    return server


def _point_at(server: TemporaryServer) -> None:
    """This process (and the processes it starts) use ``server``; an imported Prefect, which read the environment
    when it was imported (``--runner`` imports it before the server is chosen), reads it again."""
    os.environ["PREFECT_API_URL"] = server.api_url
    os.environ["PREFECT_UI_URL"] = ""  # no UI is served: no "View at" link to it (Prefect's own showed none)
    settings.reread_environment()


def _prefect_api_url() -> str | None:
    """The API URL of an imported Prefect's current settings (a ``temporary_settings`` block, e.g. a test
    harness's), or None (none set, or Prefect not imported: nothing to ask it without importing it)."""
    if "prefect.settings" not in sys.modules:
        return None
    value = sys.modules["prefect.settings"].PREFECT_API_URL.value()
    return str(value) if value else None


def wait_temporary(timeout: float = START_TIMEOUT) -> None:
    """Wait until this command's temporary server answers (nothing to wait for without one). A port taken in the
    meantime: started again on another one (as Prefect does). Raises :class:`ServerError` when it exits or does
    not answer within ``timeout`` seconds."""
    server = temporary()
    if server is None:
        return
    deadline = time.monotonic() + timeout
    while not healthy(server.api_url, timeout=1.0):
        status = server.server_process.poll()
        if status == PORT_IN_USE and time.monotonic() <= deadline:
            server.port = _free_port()
            server.server_process = _uvicorn(server.port)
            _point_at(server)  # Prefect, imported by now, read the old URL
            continue
        if status is not None or time.monotonic() > deadline:
            why = (f"exited with status {status}" if status is not None
                   else f"did not answer within {timeout:.0f} s")
            home = os.environ.get("PREFECT_HOME") or "~/.prefect"
            raise ServerError(f"the temporary Prefect server {why} (its PREFECT_HOME: {home}); set PREFECT_API_URL to "
                              "a Prefect server that runs, or see the server's own messages above")
        time.sleep(0.05)


def stop_temporary() -> None:
    """Stop this command's temporary server (an exit handler): the run's queued log lines sent to it first, then
    SIGTERM, SIGKILL after 5 s."""
    while _TEMPORARY:
        process = _TEMPORARY.pop().server_process
        if process.poll() is None:
            settings.send_queued_logs()
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
