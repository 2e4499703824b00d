"""A private PostgreSQL cluster for the overhead benchmark (scripts/bench-overhead.py, issue 24).

The cluster is Debian's PostgreSQL (postgresql-NN, the highest NN under /usr/lib/postgresql),
made by initdb in a temporary directory of its own, owned by the postgres user. It listens on
a unix socket in that directory only (listen_addresses='', no TCP), under a port number that
names the socket, so it can neither clash with nor touch the package's own "main" cluster.
pgbench -i fills a database "bench" at a given scale. stop() shuts it down and removes the
directory; it is safe to call at any point of start(), and more than once.
"""

import glob
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time

PG_LIB = "/usr/lib/postgresql"
PG_USER = "postgres"
DATABASE = "bench"
SOCKET_PATH_MAX = 100  # sun_path is 108 bytes; PostgreSQL refuses longer socket paths
INSTALL_HINT = "install it with: make -f Makefile.perf bench-deps (scripts/install-deps.sh --bench)"


class PgError(Exception):
    pass


def find_bin_dir(override=None):
    """The bin directory of the newest PostgreSQL installed (or OVERRIDE): it must hold initdb,
    pg_ctl, createdb and pgbench."""
    if override:
        candidates = [override]
    else:
        found = glob.glob(f"{PG_LIB}/*/bin")
        candidates = sorted(found, key=lambda d: [int(x) for x in re.findall(r"\d+", os.path.basename(os.path.dirname(d)))],
                            reverse=True)
    for d in candidates:
        if all(os.access(os.path.join(d, b), os.X_OK) for b in ("initdb", "pg_ctl", "createdb", "pgbench")):
            return d
    where = override or f"{PG_LIB}/*/bin"
    raise PgError(f"no PostgreSQL with initdb, pg_ctl, createdb and pgbench in {where}: {INSTALL_HINT}")


def client_env():
    """Our environment without PG* variables, so that a user's PGDATABASE or PGHOST cannot
    point pgbench elsewhere."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PG")}


class PgCluster:
    def __init__(self, bin_dir, port, log):
        self.bin, self.port, self.log = bin_dir, port, log
        self.version = os.path.basename(os.path.dirname(bin_dir))
        self.dir = None  # the temporary directory: the socket, data/ and server.log
        try:
            self.user = pwd.getpwnam(PG_USER)
        except KeyError:
            raise PgError(f"no user {PG_USER}: {INSTALL_HINT}") from None

    @property
    def data(self):
        return os.path.join(self.dir, "data")

    def client_args(self):
        """Where pgbench and createdb connect: our socket directory and port, as postgres."""
        return ["-h", self.dir, "-p", str(self.port), "-U", PG_USER]

    def pgbench_argv(self, seconds, clients, threads):
        return ([os.path.join(self.bin, "pgbench")] + self.client_args()
                + ["-n", "-c", str(clients), "-j", str(threads), "-T", str(seconds), DATABASE])

    def _run(self, argv, as_postgres, timeout, what):
        kw = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []} if as_postgres else {}
        try:
            # A session of its own: a Ctrl-C at the terminal reaches the benchmark, which then
            # stops the cluster, and never the server directly.
            r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
                               cwd=self.dir, env=client_env(), start_new_session=True, **kw)
        except subprocess.TimeoutExpired:
            raise PgError(f"{what}: no answer after {timeout} s ({' '.join(argv)})") from None
        if r.returncode != 0:
            out = (r.stdout + r.stderr).strip().splitlines()
            raise PgError(f"{what} failed (exit status {r.returncode}): {' | '.join(out[-5:])}")
        return r.stdout + r.stderr

    def start(self, scale):
        """initdb, start the server, create the database and fill it with pgbench -i."""
        self.dir = tempfile.mkdtemp(prefix="bench-pg-")
        os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        socket = os.path.join(self.dir, f".s.PGSQL.{self.port}")
        if len(socket) > SOCKET_PATH_MAX:
            raise PgError(f"socket path {socket} longer than {SOCKET_PATH_MAX} bytes: set TMPDIR to a shorter directory")
        self.log(f"PostgreSQL {self.version}: initdb in {self.dir}")
        self._run([os.path.join(self.bin, "initdb"), "-D", self.data, "-A", "trust", "-U", PG_USER, "--locale=C", "-E", "UTF8",
                   "--no-sync"], True, 120, "initdb")
        # -k: the socket in our directory; listen_addresses='': no TCP at all.
        options = f"-k {self.dir} -p {self.port} -c listen_addresses=''"
        self._run([os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-l", os.path.join(self.dir, "server.log"),
                   "-o", options, "-w", "-t", "60", "start"], True, 90, "pg_ctl start")
        self._run([os.path.join(self.bin, "createdb")] + self.client_args() + [DATABASE], False, 60, "createdb")
        t0 = time.monotonic()
        self._run([os.path.join(self.bin, "pgbench")] + self.client_args() + ["-i", "-s", str(scale), DATABASE],
                  False, 900, f"pgbench -i -s {scale}")
        self.log(f"PostgreSQL {self.version}: pgbench -i -s {scale} took {time.monotonic() - t0:.0f} s "
                 f"(socket {socket}, no TCP)")

    def warm_up(self, seconds, clients, threads):
        """One untimed pgbench run: the first run after -i reads its tables into the cache."""
        self._run(self.pgbench_argv(seconds, clients, threads), False, seconds + 120, "pgbench warm-up")

    def server_log(self, lines=5):
        try:
            with open(os.path.join(self.dir, "server.log"), errors="replace") as f:
                return " | ".join(line.strip() for line in f.readlines()[-lines:])
        except (OSError, TypeError):
            return ""

    def _postmaster_pid(self):
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                return int(f.readline())
        except (OSError, ValueError):
            return None

    def stop(self):
        """Stops the server (fast shutdown; immediate, then SIGKILL, if that fails) and removes
        the directory. Never raises: it runs on the way out of errors too."""
        if not self.dir:
            return
        pid = self._postmaster_pid()
        if pid:
            try:
                self._run([os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-m", "fast", "-w", "-t", "60", "stop"],
                          True, 90, "pg_ctl stop")
            except (PgError, OSError) as e:
                self.log(f"PostgreSQL: {e}; stopping the server {pid} with signals")
                self._kill(pid)
        shutil.rmtree(self.dir, ignore_errors=True)
        self.log(f"PostgreSQL {self.version}: stopped, {self.dir} removed")
        self.dir = None

    @staticmethod
    def _kill(pid):
        for sig, wait_s in ((signal.SIGQUIT, 10), (signal.SIGKILL, 5)):  # SIGQUIT: immediate shutdown
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}"):
                time.sleep(0.1)


PGBENCH_TXNS = re.compile(r"^number of transactions actually processed: (\d+)", re.M)
PGBENCH_FAILED = re.compile(r"^number of failed transactions: (\d+)", re.M)
PGBENCH_TPS = re.compile(r"^tps = ([\d.]+) \(without initial connection time\)", re.M)


def parse_pgbench(out):
    """(transactions, TPS) from pgbench's report; None if it has no such report or a
    transaction failed."""
    txns, tps, failed = PGBENCH_TXNS.search(out), PGBENCH_TPS.search(out), PGBENCH_FAILED.search(out)
    if not txns or not tps or (failed and int(failed.group(1)) > 0):
        return None
    return int(txns.group(1)), float(tps.group(1))
