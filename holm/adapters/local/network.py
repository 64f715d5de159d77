"""The way out of a box that may use the network: a user-mode network stack (passt's pasta,
built by scripts/build-pasta) attached to the box's own network namespace. Both runtimes
use it: a local box's namespace is bwrap's, a docker box's the engine's (a container of
`network_mode="none"`, docs/runtimes.md).

Every box has its own network namespace, so 127.0.0.1 in a box is the box's own:
holmd and every service bound to the host's loopback are out of reach, and so are the
abstract Unix sockets of the host (its X displays among them). A box whose policy allows
the network gets pasta: an interface configured like the host's (its address, its
gateway, its resolver), whose packets pasta turns into ordinary sockets of the host. So a
box reaches what any program of the host reaches, except:

- the host's loopback: pasta maps no address of the box to it (`--no-map-gw`, and no
  port is forwarded either way: `-t none -u none -T none -U none`);
- the host's other own addresses (a docker bridge's, a veth's, and the link-local ones):
  the box's routing rules prohibit them, so a service the host binds to all its addresses
  is out of reach too. Root in the box has no CAP_NET_ADMIN to change that.

pasta runs as the box's host uid (as root for a docker box, see `_target`), in the
host's network namespace, outside the box's pid
namespace. It does not end when the box does: the runtime ends it with the box, by the pid
and start time this module returns (kept in the box's record, like the box's own init).
It comes up while the box starts; the box is not ready before it is up.

Everything here blocks: call it from a thread.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from holm.adapters.local import procs

# Built from Debian 13's source package by scripts/build-pasta, into the virtualenv holm
# runs in: Debian 12's own pasta holds twice the memory in every box (docs/agent.md, Memory).
PASTA = Path(sys.prefix, "libexec", "holm", "pasta")
PASTA_OPTIONS = (
    "--config-net",
    # With the gateway mapped, the gateway's address in the box would be the host's
    # loopback.
    "--no-map-gw",
    "-t",
    "none",
    "-u",
    "none",
    "-T",
    "none",
    "-U",
    "none",
    "--quiet",
)
ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
PASTA_TIMEOUT_S = 30.0


class NetworkFailed(Exception):
    pass


def available() -> bool:
    return os.access(PASTA, os.X_OK)


class Attaching:
    """A pasta on its way up: its first process configures the box's interface, then forks
    the pasta that stays into the background and ends."""

    def __init__(self, process: subprocess.Popen[bytes], pidfile: Path) -> None:
        self.process = process
        # Where pasta writes the pid of the pasta that stays; kept in the box's record
        # until that pid is, so that a holmd that dies meanwhile leaves none behind.
        self.pidfile = pidfile
        self._up: tuple[int, int] | None = None

    def wait(self) -> tuple[int, int]:
        """Block until the box's network is up; the pid and start time of its pasta."""
        if self._up is not None:
            return self._up
        try:
            code = self.process.wait(timeout=PASTA_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.cancel()
            raise NetworkFailed("pasta did not bring the box's network up in time") from None
        stat = _pasta_of(self.pidfile)
        self.pidfile.unlink(missing_ok=True)
        if code != 0 or stat is None:
            if stat is not None:
                procs.end_one(stat.pid, stat.start, 1.0)
            raise NetworkFailed(f"pasta ended with {code}; see the box's log")
        self._up = stat.pid, stat.start
        return self._up

    def cancel(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        end_left_behind(self.pidfile)


def attach(init_pid: int, box_uid: int, log: Path, *, again: bool = False) -> Attaching:
    """Give the network namespace of the box whose init is `init_pid` a way out (pasta
    runs as `box_uid` when the box has a user namespace of its own, see `_target`). The
    host's own addresses are routed away first, so that the box never has a way to them;
    pasta then comes up while the box starts (`Attaching.wait` says when it is up).

    `again` is for a box whose pasta ended while the box runs: its namespace keeps the
    rules made at its start (root in the box cannot remove them), so none are added."""
    if not available():
        raise NetworkFailed(f"pasta is not installed at {PASTA} (scripts/setup builds it)")
    if not again:
        block_host_addresses(init_pid)
    target, netns = _target(init_pid, box_uid)
    try:
        # pasta opens its pid file before it becomes the box's uid, as root with only the
        # capabilities it keeps (no CAP_DAC_OVERRIDE): the file is root's, as it opens it.
        fd, name = tempfile.mkstemp(prefix="holm-pasta-", suffix=".pid", dir="/tmp")
        os.close(fd)
        pidfile = Path(name)
        argv = [str(PASTA), *PASTA_OPTIONS, "--pid", str(pidfile), *target]
        with open(log, "ab") as out:
            process = subprocess.Popen(
                argv,
                # pasta closes every descriptor it inherits but these three, before it
                # opens the namespace: the one it is handed is its stdin.
                stdin=subprocess.DEVNULL if netns is None else netns,
                stdout=out,
                stderr=out,
                env=ENV,
                cwd="/",
                start_new_session=True,
            )
    finally:
        if netns is not None:
            os.close(netns)
    return Attaching(process, pidfile)


def _target(init_pid: int, box_uid: int) -> tuple[list[str], int | None]:
    """As whom pasta runs and how it joins the box's network namespace (its options), and
    the descriptor of that namespace it is handed, if any.

    A local box has a user namespace of its own, owned by its host uid: pasta joins it
    and runs as that uid. A docker box's namespaces are the engine's, owned by the host's
    user namespace: pasta cannot join that one (it is already in it), and only root with
    CAP_SYS_ADMIN may enter a network namespace of root's, which pasta does again
    whenever it talks to the box's side. So there it runs as root, with CAP_SYS_ADMIN
    and CAP_NET_BIND_SERVICE only, under its own seccomp filter. It is handed the
    namespace open: with so few capabilities it may not open the /proc entry of a box's
    init that holds a capability it lacks (CAP_SETGID, docker/runtime.py)."""
    if _user_namespace(init_pid) != _user_namespace(os.getpid()):
        return ["--runas", str(box_uid), str(init_pid)], None
    try:
        netns = os.open(f"/proc/{init_pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise NetworkFailed(f"the box's init {init_pid} is gone: {exc}") from None
    # pasta would watch its namespace's path for the namespace's end, and that path is
    # its own stdin, which it leaves when it forks into the background: it would end
    # then. The runtime ends it with the box, as it does a local box's.
    return ["--runas", "0", "--netns", "/proc/self/fd/0", "--no-netns-quit"], netns


def _user_namespace(pid: int) -> int:
    try:
        return os.stat(f"/proc/{pid}/ns/user").st_ino
    except OSError as exc:
        raise NetworkFailed(f"the box's init {pid} is gone: {exc}") from None


def end_left_behind(pidfile: Path) -> None:
    """End the pasta a pidfile names (one whose holmd died before it learnt its pid)."""
    stat = _pasta_of(pidfile)
    if stat is not None:
        procs.end_one(stat.pid, stat.start, 1.0)
    pidfile.unlink(missing_ok=True)


def _pasta_of(pidfile: Path) -> procs.ProcStat | None:
    """The live pasta a pidfile names, if it names one."""
    try:
        pid = int(pidfile.read_text().strip() or "0")
    except (OSError, ValueError):
        return None
    if pid <= 0:
        return None
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None
    # pasta is passt under another name, and runs its AVX2 build (pasta.avx2) where the
    # CPU has AVX2 (scripts/build-pasta).
    if not comm.startswith(("pasta", "passt")):
        return None
    return procs.read_stat(pid)


def host_addresses() -> list[str]:
    """The host's own addresses but its loopback ones (IPv4 and IPv6, link-local ones
    included: pasta takes the host's own `fe80::…` from the box to the host), from /proc."""
    found: set[str] = set()
    with contextlib.suppress(OSError), open("/proc/net/fib_trie") as f:
        last = ""
        for line in f:
            words = line.split()
            if words and words[0] in ("|--", "+--") and len(words) >= 2:
                last = words[1]
            elif "/32 host LOCAL" in line and last:
                found.add(last)
    with contextlib.suppress(OSError), open("/proc/net/if_inet6") as f:
        for line in f:
            raw = line.split()[0]
            found.add(str(ipaddress.IPv6Address(int(raw, 16))))
    kept = []
    for text in sorted(found):
        with contextlib.suppress(ValueError):
            address = ipaddress.ip_address(text)
            if not (address.is_loopback or address.is_unspecified):
                kept.append(text)
    return kept


def block_host_addresses(init_pid: int) -> None:
    """Rules in the box's namespace that prohibit each of the host's own addresses. Rules,
    not `unreachable` routes: an IPv6 route lookup bound to an interface (a link-local
    address with its zone, or a socket's `IPV6_UNICAST_IF`) passes over a route that is not
    on that interface, and a reject route is on `lo`; a rule applies whatever the
    interface. The address pasta gave the box (the host's, on its outbound interface)
    stays the box's own: the rules come after the table of local addresses."""
    addresses = host_addresses()
    for family, bits in (("-4", 32), ("-6", 128)):
        lines = [
            f"rule add to {a}/{bits} prohibit\n" for a in addresses if (":" in a) == (bits == 128)
        ]
        if not lines:
            continue
        done = subprocess.run(
            ["nsenter", f"--target={init_pid}", "--net", "--", "ip", family, "-batch", "-"],
            input="".join(lines).encode(),
            capture_output=True,
            env=ENV,
            timeout=PASTA_TIMEOUT_S,
        )
        if done.returncode != 0:
            raise NetworkFailed(
                "could not keep the box from the host's addresses: "
                + done.stderr.decode(errors="replace").strip()
            )
