"""How URLs are shown and what of them is registered (``oxyeval.redact``).

A model's URL hides its whole userinfo (a token is often written as the user name:
``https://TOKEN@host``); a history's database URL hides only the password. A credential
holding a raw ``/``, ``?``, ``#``, ``@`` or ``:`` is masked as far as any library reads it
(httpx and urllib end the host at the first ``/?#``, SQLAlchemy ends the password at the
first ``@``), and what those libraries then quote as a "port" or a "host" is registered.
"""

from __future__ import annotations

import pytest

from oxyeval.redact import mask_credentials, redact, register_credentials, split_userinfo


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://TOKEN-123456@api.example/v1", "https://***@api.example/v1"),
        ("http://alice:secret@h:9/v1", "http://***@h:9/v1"),
        ("https://u:p@[::1]:8080/v1", "https://***@[::1]:8080/v1"),
        ("http://alice:pw/SECRET@h:9/v1", "http://***@h:9/v1"),
        ("http://alice:pw?SECRET@h:9/v1", "http://***@h:9/v1"),
        ("http://alice:pw#SECRET@h:9/v1", "http://***@h:9/v1"),
        ("http://alice:pw@SECRET@h:9/v1", "http://***@h:9/v1"),
        ("http://to/ken@h/v1", "http://***@h/v1"),
        ("postgresql://report_writer@db/h", "postgresql://report_writer@db/h"),
        ("postgres://bob:pw@db/h", "postgres://bob:***@db/h"),
        ("postgresql+psycopg://bob:pa/ss@db:5432/h", "postgresql+psycopg://bob:***@db:5432/h"),
        ("postgresql://bob:pa?ss@db/h", "postgresql://bob:***@db/h"),
        ("postgresql://bob:pa#ss@db/h", "postgresql://bob:***@db/h"),
        ("postgresql://bob:pa@ss@db/h", "postgresql://bob:***@db/h"),
        ("postgresql://bob:pa:ss@db/h", "postgresql://bob:***@db/h"),
        ("postgresql://bob:pa%2Fss@db/h", "postgresql://bob:***@db/h"),
        (
            "postgresql://bob@db/h?password=pw&app=me@home",
            "postgresql://bob@db/h?password=***&app=me@home",
        ),
        ("sqlite:///x.db", "sqlite:///x.db"),
        ("host=h password='a b'", "host=h password=***"),
        # an '@' in a path followed by no host: nothing to mask
        (
            "https://x.googleapis.com/v1/models/claude@20241022:rawPredict",
            "https://x.googleapis.com/v1/models/claude@20241022:rawPredict",
        ),
    ],
)
def test_each_url_is_masked_by_its_own_rule(url: str, shown: str) -> None:
    assert mask_credentials(url) == shown


def test_the_user_name_of_a_model_url_is_registered() -> None:
    register_credentials("https://tok-registered-0123@api.example/v1")
    assert redact("unknown user tok-registered-0123") == "unknown user ***"


def test_what_httpx_and_urllib_quote_as_a_port_is_registered() -> None:
    """``http://alice:FIRSTHALF/rest@host``: httpx and urllib read ``FIRSTHALF`` as the
    port and say so in their errors."""
    register_credentials("http://alice:FIRSTHALF-77/rest-of-it-88@h/v1")
    assert redact("Invalid port: 'FIRSTHALF-77'") == "Invalid port: '***'"
    assert redact("FIRSTHALF-77/rest-of-it-88") == "***"


def test_split_userinfo_reads_what_mask_credentials_masks() -> None:
    assert split_userinfo("postgresql://bob:pa/ss@h:1/db") == (
        "bob",
        "pa/ss",
        "postgresql://h:1/db",
    )
    assert split_userinfo("https://TOKEN@h/v1") == ("TOKEN", None, "https://h/v1")
    assert split_userinfo("https://h/v1") is None


def test_a_url_userinfo_is_scrubbed_as_the_basic_header_carries_it_too() -> None:
    """An HTTP client sends ``http://bob:pw@host`` as ``Authorization: Basic
    base64(bob:pw)``; a server that quotes the header back (an error, an echo) must not
    leak it (found by an attacker's review of the A/B branches' endpoints)."""
    import base64

    from oxyeval.redact import redact, register_credentials, secret_scope

    with secret_scope():
        register_credentials("http://bob:S3cret%2FPass9@127.0.0.1:9/v1")
        header = base64.b64encode(b"bob:S3cret/Pass9").decode()
        assert redact(f"Incorrect API key provided: {header}") == "Incorrect API key provided: ***"
        register_credentials("https://tok-123456789@api.example/v1")  # a token as the user
        token = base64.b64encode(b"tok-123456789:").decode()
        assert token not in redact(f"echo {token}")


def test_a_key_echoed_base64_encoded_is_scrubbed_too() -> None:
    import base64

    from oxyeval.redact import redact, register_secret, secret_scope

    key = "sk-live-S3cr3tV4lue0123456789abcd?"
    with secret_scope():
        register_secret(key)
        for form in (
            base64.b64encode(key.encode()).decode(),
            base64.b64encode(key.encode()).decode().rstrip("="),
            base64.urlsafe_b64encode(key.encode()).decode(),
        ):
            assert form not in redact(f"the key, encoded: {form}.")
        assert key[::-1] in redact(f"reversed: {key[::-1]}")  # not recognised (documented)


@pytest.mark.parametrize(
    "name", ["code", "key", "api_key", "apikey", "token", "access_token", "sig", "password"]
)
def test_a_credential_named_query_parameter_of_a_url_is_registered_and_masked(name: str) -> None:
    key = "qk-" + name + "-5Tz8Lm2Rq7Vw"
    url = f"https://app.azurewebsites.net/api/chat?{name}={key}&v=2"
    register_credentials(url)
    assert mask_credentials(url) == f"https://app.azurewebsites.net/api/chat?{name}=***&v=2"
    assert (
        redact(f"401 for {url}") == f"401 for https://app.azurewebsites.net/api/chat?{name}=***&v=2"
    )
    assert redact(f"echo {key}") == "echo ***"
