"""A real PostgreSQL server for the tests: the binaries of PyPI's ``pgserver`` wheel, a data folder of the test
session's own, a Unix socket only (no TCP port), password authentication for every role but the superuser.

As root (PostgreSQL refuses to run as root), ``pgserver`` runs the server as a system user ``pgserver`` it creates
with ``useradd`` and makes the data folder's parents traversable by it; as any other user it runs as that user.
"""

from __future__ import annotations

import secrets
import warnings
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

__all__ = ["PostgresServer", "start_postgres", "user_db"]

#: Who may connect how: the superuser without a password (the tests' own set-up), every other role with one.
PG_HBA = """\
local all postgres trust
local all all scram-sha-256
"""


@dataclass
class PostgresServer:
    """A running server: ``socket_dir`` holds its Unix socket; ``psql`` runs SQL as the superuser."""

    handle: object  # pgserver.PostgresServer
    socket_dir: str

    def psql(self, sql: str) -> str:
        return self.handle.psql(sql)  # type: ignore[attr-defined]

    def create_database(self, name: str, owner: str = "postgres") -> None:
        self.psql(f'CREATE DATABASE "{name}" OWNER "{owner}";')

    def create_role(self, name: str, password: str) -> None:
        literal = password.replace("'", "''")
        self.psql(f"CREATE ROLE \"{name}\" LOGIN PASSWORD '{literal}';")

    def url(self, database: str, user: str = "postgres", password: str | None = None) -> str:
        """A ``postgresql+psycopg2://`` URL (driver ``psycopg2-binary``) over the server's Unix socket."""
        auth = user if password is None else f"{user}:{quote(password, safe='')}"
        return f"postgresql+psycopg2://{auth}@/{database}?host={self.socket_dir}"

    def stop(self) -> None:
        self.handle.cleanup()  # type: ignore[attr-defined]


def user_db(postgres: PostgresServer) -> tuple[str, str, str]:
    """A new role with a password holding ``/`` and ``@``, and an empty database it owns: (role, password, db)."""
    role = f"tau_{secrets.token_hex(3)}"
    password = f"s3c/r@t-{secrets.token_hex(6)}"
    postgres.create_role(role, password)
    postgres.create_database(role, owner=role)
    return role, password, role


def start_postgres(folder: Path) -> PostgresServer:
    """Start a PostgreSQL server with its data in ``folder`` (which must not exist yet); raises if it cannot."""
    with warnings.catch_warnings():  # platformdirs: "XDG_RUNTIME_DIR is not set, falling back to /tmp/runtime-<uid>"
        warnings.simplefilter("ignore")
        import pgserver

    handle = pgserver.get_server(folder, cleanup_mode="stop")
    socket_dir = str(handle.get_postmaster_info().socket_dir)
    (folder / "pg_hba.conf").write_text(PG_HBA)
    server = PostgresServer(handle, socket_dir)
    reloaded = server.psql("SELECT pg_reload_conf();")
    if " t" not in reloaded:
        server.stop()
        raise RuntimeError(f"PostgreSQL in {folder} did not reload pg_hba.conf: {reloaded!r}")
    return server


if __name__ == "__main__":  # a smoke check: python tests/helpers/pg_server.py
    import tempfile

    server = start_postgres(Path(tempfile.mkdtemp()) / "pg")
    print(server.psql("SELECT version();"))
    server.create_role("tau", "s3c/r@t")
    server.create_database("smoke", owner="tau")
    import sqlalchemy

    engine = sqlalchemy.create_engine(server.url("smoke", "tau", "s3c/r@t"))
    with engine.connect() as conn:
        print(conn.execute(sqlalchemy.text("SELECT current_user")).scalar())
    try:
        sqlalchemy.create_engine(server.url("smoke", "tau", "wrong")).connect()
    except sqlalchemy.exc.OperationalError as err:
        print("wrong password refused:", str(err).splitlines()[0])
    server.stop()
