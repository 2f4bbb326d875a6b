"""A secured development cluster: SASL_SSL (SCRAM-SHA-512) with a PEM CA, ACLs enforced.

Made once per data directory with `openssl` (Debian's, on every machine that runs Kafka here):
a CA, a server certificate for 127.0.0.1/localhost signed by it, and a random password for the
super user `admin`. Files holding secrets are mode 0600. The controller listener (127.0.0.1) is
SASL_PLAINTEXT with PLAIN: KRaft controllers cannot authenticate with SCRAM (its credentials live
in the metadata log they serve), so the admin's PLAIN credentials are in that listener's JAAS
config. It is never PLAINTEXT with ANONYMOUS as a super user: an admin client can talk to a
controller directly (`kafka-acls --bootstrap-controller`, KIP-919), and then anyone on the
machine could grant themselves every ACL. Clients only ever see the SASL_SSL listener.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

from offsetkeeper.errors import OffsetkeeperError
from offsetkeeper.storage import write_text_atomic

ADMIN = "admin"
MECHANISM = "SCRAM-SHA-512"
CONTROLLER_MECHANISM = "PLAIN"  # KRaft controllers cannot use SCRAM (see the module docstring)
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@dataclass(frozen=True)
class SecuritySetup:
    """Paths and the admin secret of one secured cluster."""

    ca_pem: Path
    server_pem: Path
    client_properties: Path
    admin_password: str

    def server_properties(self, port: int, cport: int) -> dict[str, object]:
        jaas = (f'org.apache.kafka.common.security.scram.ScramLoginModule required '
                f'username="{ADMIN}" password="{self.admin_password}";')
        controller_jaas = (f'org.apache.kafka.common.security.plain.PlainLoginModule required '
                           f'username="{ADMIN}" password="{self.admin_password}" '
                           f'user_{ADMIN}="{self.admin_password}";')
        return {
            "listeners": f"SASL_SSL://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}",
            "advertised.listeners": f"SASL_SSL://127.0.0.1:{port}",
            "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
            "inter.broker.listener.name": "SASL_SSL",
            "sasl.enabled.mechanisms": MECHANISM,
            "sasl.mechanism.inter.broker.protocol": MECHANISM,
            f"listener.name.sasl_ssl.{MECHANISM.lower()}.sasl.jaas.config": jaas,
            "sasl.mechanism.controller.protocol": CONTROLLER_MECHANISM,
            "listener.name.controller.sasl.enabled.mechanisms": CONTROLLER_MECHANISM,
            "listener.name.controller.plain.sasl.jaas.config": controller_jaas,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": self.server_pem,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": self.ca_pem,
            "ssl.endpoint.identification.algorithm": "https",
            "authorizer.class.name": AUTHORIZER,
            "super.users": f"User:{ADMIN}",
            "allow.everyone.if.no.acl.found": "false",
        }

    def format_args(self) -> list[str]:
        return ["--add-scram", f"{MECHANISM}=[name={ADMIN},password={self.admin_password}]"]

    def client_conf(self) -> dict[str, str]:
        """librdkafka properties of the admin principal."""
        return {"security.protocol": "SASL_SSL", "sasl.mechanism": MECHANISM,
                "sasl.username": ADMIN, "sasl.password": self.admin_password,
                "ssl.ca.location": str(self.ca_pem)}


def _openssl(*args: str, cwd: Path) -> None:
    r = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False,
                       stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["no output"])[-1]
        raise OffsetkeeperError(f"openssl {args[0]} failed while making the dev cluster's CA: {last}")


def _write_secret(path: Path, text: str) -> None:
    write_text_atomic(str(path), text)
    os.chmod(path, 0o600)


def prepare_security(d: Path) -> SecuritySetup:
    """Make (once) the CA, server certificate, admin password and client properties in `d`."""
    tls = d / "tls"
    tls.mkdir(parents=True, exist_ok=True)
    os.chmod(tls, 0o700)
    secret_file = tls / "admin.json"
    if not secret_file.exists():
        _write_secret(secret_file, json.dumps({"password": secrets.token_urlsafe(18)}))
    password = json.loads(secret_file.read_text())["password"]
    ca, server = tls / "ca.pem", tls / "server.pem"
    if not (ca.exists() and server.exists()):
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650",
                 "-subj", "/CN=offsetkeeper dev CA", "-keyout", "ca.key", "-out", "ca.pem",
                 cwd=tls)
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
                 "-keyout", "server.key", "-out", "server.csr", cwd=tls)
        (tls / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "3650", "-extfile", "san.ext",
                 "-out", "server.crt", cwd=tls)
        # Kafka's PEM keystore: an unencrypted PKCS#8 key followed by the certificate chain
        _openssl("pkcs8", "-topk8", "-nocrypt", "-in", "server.key", "-out", "server.p8",
                 cwd=tls)
        _write_secret(server, (tls / "server.p8").read_text() + (tls / "server.crt").read_text())
        for tmp in ("server.key", "server.p8", "server.csr", "san.ext"):
            (tls / tmp).unlink(missing_ok=True)
        os.chmod(tls / "ca.key", 0o600)
    client = d / "client.properties"
    setup = SecuritySetup(ca, server, client, password)
    _write_secret(client, "".join(f"{k}={v}\n" for k, v in setup.client_conf().items()))
    return setup
