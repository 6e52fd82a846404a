"""Bitbucket Data Center behind a private CA: trusted with ``caBundle``, refused without it,
and git told the same bundle."""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from promoter.config import Repository
from promoter.errors import ScmUnavailable
from scm_plugins.bitbucket_datacenter import BitbucketDataCenterScm

from .conftest import PROJECT_REPO, TOKEN, TOKEN_ENV, datacenter_provider
from .fake_datacenter import FakeDataCenter


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by its own key: its own CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bitbucket.test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    certfile, keyfile = folder / "ca.pem", folder / "key.pem"
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return certfile, keyfile


@pytest.fixture
def tls(tmp_path: Path, bare: Path) -> Iterator[tuple[FakeDataCenter, Path]]:
    certfile, keyfile = self_signed(tmp_path)
    fake = FakeDataCenter(token=TOKEN)
    fake.add_repository(PROJECT_REPO, bare)
    fake.use_tls(certfile, keyfile)
    with fake:
        yield fake, certfile


def test_a_private_ca_is_refused_without_the_bundle_and_trusted_with_it(
    tls: tuple[FakeDataCenter, Path],
    bare: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake, ca = tls
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    repo = Repository(
        name="gitops",
        url=f"{fake.base_url}/scm/ops/gitops.git",
        scm_provider="b",
        path=PROJECT_REPO,
    )
    untrusting = BitbucketDataCenterScm(
        provider=datacenter_provider(fake.base_url), state_dir=str(tmp_path)
    )
    try:
        with pytest.raises(ScmUnavailable, match="check caBundle"):
            untrusting.find_open_pull_request(repo=repo, head="a", base="b")
    finally:
        untrusting.close()
    trusting = BitbucketDataCenterScm(
        provider=datacenter_provider(fake.base_url, caBundle=str(ca)), state_dir=str(tmp_path)
    )
    try:
        assert trusting.find_open_pull_request(repo=repo, head="a", base="b") is None
        env = trusting.git_environment(repo=repo)
        settings = {
            env[f"GIT_CONFIG_KEY_{i}"]: env[f"GIT_CONFIG_VALUE_{i}"]
            for i in range(int(env["GIT_CONFIG_COUNT"]))
        }
        origin = fake.url
        assert settings[f"http.{origin}/.sslCAInfo"] == str(ca)
        assert settings[f"http.{origin}/.extraheader"] == f"Authorization: Bearer {TOKEN}"
    finally:
        trusting.close()
