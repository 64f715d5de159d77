"""A second Docker Engine on this machine that stands for one on another host: its own
dockerd, with its own --data-root, --exec-root, --pidfile and socket, in a network namespace
of its own joined to this one by a veth pair (a /30 of 10.213.0.0/16, `kits.net`), listening
with --tlsverify on its address there, port 2376. The certificates (a CA, the engine's, a
client's, and a client's of another CA, for a wrong-certificate test) are made here with
`cryptography`.

Its own network namespace, not a loopback port of this one: a dockerd makes its bridge and
iptables rules in the namespace it runs in, and a second one in this namespace would fight the
first over `docker0` (docs/runtimes.md). Started and stopped by its pid (the process group
it leads); everything it made (namespace, veth, folders) is removed at the end."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from holm.adapters.docker.engine_tls import EngineAddress, engine_client, tls_context
from kits.net import _ip, free_subnet

PORT = 2376
UP_WITHIN_S = 90.0


@dataclass(frozen=True)
class Credentials:
    """PEM text, as a runtime's secrets carry it."""

    ca: str
    cert: str
    key: str

    def secrets(self) -> dict[str, str]:
        return {"ca": self.ca, "cert": self.cert, "key": self.key}


@dataclass(frozen=True)
class RemoteEngine:
    address: str
    port: int
    # The client's certificates signed by the engine's CA, and a client's of another CA.
    client: Credentials
    stranger: Credentials
    folder: Path
    pid: int

    def cut(self) -> None:
        """The engine's host goes away: its address is unreachable from here (a connect
        fails at once) until `mend`; the engine and its containers keep running, and a
        connection open to it waits, as one to a host that is gone does."""
        _ip("route", "add", "unreachable", f"{self.address}/32")

    def mend(self) -> None:
        _ip("route", "del", "unreachable", f"{self.address}/32")

    @property
    def host(self) -> str:
        return f"tcp://{self.address}:{self.port}"

    def docker_client(self) -> docker.DockerClient:
        """A client of the engine for the tests' own checks (the runtime makes its own).
        Through holm's TLS setup: the docker SDK's own TLSConfig fails the engine's
        handshake with this requests ("bad record MAC")."""
        tls = tls_context(self.client.ca, self.client.cert, self.client.key)
        return engine_client(EngineAddress(self.address, self.port, tls), 600)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def _pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _certificate(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None,
    *,
    usage: x509.ObjectIdentifier | None = None,
    addresses: tuple[str, ...] = (),
) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    issuer_name, signer = issuer if issuer is not None else (name, key)
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
    )
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if addresses:
        sans = [x509.IPAddress(ipaddress.ip_address(a)) for a in addresses]
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(signer, hashes.SHA256())


def _authority(subject: str) -> tuple[x509.Name, ec.EllipticCurvePrivateKey, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _certificate(subject, key, None)
    return cert.subject, key, _pem(cert)


def _signed(
    authority: tuple[x509.Name, ec.EllipticCurvePrivateKey, str],
    subject: str,
    usage: x509.ObjectIdentifier,
    addresses: tuple[str, ...] = (),
) -> Credentials:
    name, signer, ca = authority
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _certificate(subject, key, (name, signer), usage=usage, addresses=addresses)
    return Credentials(ca=ca, cert=_pem(cert), key=_pem_key(key))


def _write(folder: Path, credentials: Credentials) -> None:
    folder.mkdir(mode=0o700, parents=True)
    for name, text in (
        ("ca.pem", credentials.ca),
        ("cert.pem", credentials.cert),
        ("key.pem", credentials.key),
    ):
        (folder / name).write_text(text)
        (folder / name).chmod(0o600)


def _answers(client: docker.DockerClient) -> bool:
    try:
        return bool(client.ping())
    except Exception:
        return False


@contextlib.contextmanager
def remote_engine() -> Iterator[RemoteEngine]:
    """The second engine, up and answering over TLS; stopped and removed at the end."""
    tag = secrets.token_hex(3)
    netns, host_end, far_end = f"holmrd-{tag}", f"hrd{tag}a", f"hrd{tag}b"
    net = free_subnet()
    host_address, address = str(net[1]), str(net[2])
    # Short: the engine's containerd sockets go under its exec-root.
    folder = Path(tempfile.mkdtemp(prefix="hrd-", dir="/tmp"))
    authority = _authority("holm test engine CA")
    server = _signed(authority, "holm test engine", ExtendedKeyUsageOID.SERVER_AUTH, (address,))
    client = _signed(authority, "holm", ExtendedKeyUsageOID.CLIENT_AUTH)
    stranger = _signed(_authority("another CA"), "holm", ExtendedKeyUsageOID.CLIENT_AUTH)
    _write(folder / "server", server)
    _write(folder / "client", client)
    daemon: subprocess.Popen[bytes] | None = None
    _ip("netns", "add", netns)
    try:
        _ip("link", "add", host_end, "type", "veth", "peer", "name", far_end)
        _ip("link", "set", far_end, "netns", netns)
        _ip("addr", "add", f"{host_address}/30", "dev", host_end)
        _ip("link", "set", host_end, "up")
        _ip("-n", netns, "addr", "add", f"{address}/30", "dev", far_end)
        _ip("-n", netns, "link", "set", far_end, "up")
        _ip("-n", netns, "link", "set", "lo", "up")
        files = folder / "server"
        command = [
            # nsenter, not `ip netns exec`: that mounts a sysfs of its own, without the
            # cgroup hierarchies under it, and dockerd would find no cgroups.
            "nsenter", f"--net=/run/netns/{netns}", "dockerd",
            "--data-root", str(folder / "data"),
            "--exec-root", str(folder / "exec"),
            "--pidfile", str(folder / "dockerd.pid"),
            "-H", f"unix://{folder / 'docker.sock'}",
            "-H", f"tcp://{address}:{PORT}",
            "--tlsverify",
            "--tlscacert", str(files / "ca.pem"),
            "--tlscert", str(files / "cert.pem"),
            "--tlskey", str(files / "key.pem"),
        ]  # fmt: skip
        with (folder / "dockerd.log").open("ab") as log:
            daemon = subprocess.Popen(
                command, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True
            )
        engine = RemoteEngine(address, PORT, client, stranger, folder, daemon.pid)
        probe = engine.docker_client()
        try:
            deadline = time.monotonic() + UP_WITHIN_S
            while not _answers(probe):
                tail = (folder / "dockerd.log").read_text(errors="replace")[-2000:]
                assert daemon.poll() is None, f"the second dockerd ended: {tail}"
                assert time.monotonic() < deadline, f"the second dockerd did not answer: {tail}"
                time.sleep(0.5)
        finally:
            probe.close()
        yield engine
    finally:
        if daemon is not None:
            _stop(daemon)
        subprocess.run(["ip", "link", "del", host_end], capture_output=True)
        subprocess.run(["ip", "netns", "del", netns], capture_output=True)
        _remove(folder)


def _stop(daemon: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the dockerd this kit started (its process group: nsenter execs it),
    then SIGKILL if it has not ended in a minute."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(daemon.pid, signal.SIGTERM)
    try:
        daemon.wait(timeout=60)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(daemon.pid, signal.SIGKILL)
        daemon.wait()


def _remove(folder: Path) -> None:
    # The engine's overlay mounts are gone with it; a left one would keep rmtree from
    # removing its folder, so it is unmounted first.
    data = folder / "data"
    if data.exists():
        mounts = Path("/proc/mounts").read_text().splitlines()
        for line in mounts:
            point = line.split()[1]
            if point.startswith(str(data)):
                subprocess.run(["umount", "-l", point], capture_output=True)
    shutil.rmtree(folder, ignore_errors=True)


__all__ = ["Credentials", "RemoteEngine", "remote_engine"]
