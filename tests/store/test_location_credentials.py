"""A history URL's password is read as SQLAlchemy reads it, or refused.

SQLAlchemy, which the engine is built from, takes a raw ``/``, ``?``, ``#`` or ``:`` into
the password, and so do the location checks: ``bob:pa/ss@host`` is not "port 'pa'". A
raw ``@`` (SQLAlchemy ends the password at the first one, and libpq would then look up a
host made of the rest of the password) is refused, masked, asking for ``%40``.
"""

from __future__ import annotations

import pytest
from sqlalchemy.engine import make_url

from oxyeval.store import LocationError, resolve_location


@pytest.mark.parametrize("password", ["pa/ss-0a1b", "pa?ss-0a1b", "pa#ss-0a1b", "pa:ss-0a1b"])
def test_a_password_holding_url_delimiters_is_what_sqlalchemy_reads(password: str) -> None:
    url = f"postgresql://bob:{password}@db.example:5433/hist"
    location = resolve_location(url, environ={})
    assert location.password == password
    assert location.display == "postgresql://bob:***@db.example:5433/hist"
    parsed = make_url(location.url)
    assert (parsed.username, parsed.password, parsed.host, parsed.port, parsed.database) == (
        "bob",
        password,
        "db.example",
        5433,
        "hist",
    )


def test_a_percent_encoded_password_is_decoded_once() -> None:
    location = resolve_location("postgresql://bob:pa%40ss%2F0a1b@db/hist", environ={})
    assert location.password == "pa@ss/0a1b" == make_url(location.url).password
    assert location.display == "postgresql://bob:***@db/hist"


@pytest.mark.parametrize(
    "url", ["postgresql://bob:pa@ss-0a1b@db/hist", "postgresql://bob/x:pass-0a1b@db/hist"]
)
def test_an_ambiguous_userinfo_is_refused_masked(url: str) -> None:
    with pytest.raises(LocationError) as info:
        resolve_location(url, environ={})
    assert "percent-encode" in str(info.value)
    assert "0a1b" not in str(info.value)


def test_a_password_with_delimiters_in_config_yml_is_refused() -> None:
    """config.yml holds no password, however it is spelt."""
    for password in ("pa/ss-0a1b", "pa?ss-0a1b", "pa#ss-0a1b"):
        with pytest.raises(LocationError, match="contains a password"):
            resolve_location(
                None, environ={}, history={"url": f"postgresql://bob:{password}@db/hist"}
            )
