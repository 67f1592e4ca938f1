"""``lightning_tau.tuner.storage``: a storage URL shown without its password, whatever the case of the query key."""

from __future__ import annotations

import pytest

from lightning_tau.tuner.storage import redact_message, redact_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgresql+psycopg2://u@host/db?PASSWORD=x7q9&sslmode=require",
            "postgresql+psycopg2://u@host/db?PASSWORD=***&sslmode=require",
        ),
        (
            "postgresql+psycopg2://u@host/db?Password=x7q9&sslmode=require",
            "postgresql+psycopg2://u@host/db?Password=***&sslmode=require",
        ),
        ("mysql+pymysql://u@host/db?PassWd=x7q9", "mysql+pymysql://u@host/db?PassWd=***"),
        ("mysql+pymysql://u@host/db?PWD=x7q9", "mysql+pymysql://u@host/db?PWD=***"),
    ],
)
def test_a_query_password_is_masked_whatever_the_case_of_its_key(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert "x7q9" not in redact_url(url)
    # a driver's message that echoes the password is scrubbed too
    assert redact_message("connection refused (password x7q9)", url) == "connection refused (password ***)"


def test_a_key_that_only_ends_in_password_is_left_alone() -> None:
    url = "postgresql+psycopg2://u@host/db?oldpassword=kept&sslmode=require"
    assert redact_url(url) == url
