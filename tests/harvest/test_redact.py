"""Redaction of secrets by their shape (`skillopt._util.redact`): every kind found and
named, and ordinary text, code and paths left as they were."""

from __future__ import annotations

import pytest

from skillopt._util.redact import entropy, high_entropy, redact

ANTHROPIC = "sk-ant-api03-Zx9Qw2Lm7Rt5Yp3Kd8Hs1Vb6Nc4Gf0JaZx9Qw2Lm7Rt5Yp3Kd8Hs1Vb6Nc4Gf0JaAA"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabc\n-----END RSA PRIVATE KEY-----"

CASES = [
    # (text, the secret, the kind)
    (f"ANTHROPIC_API_KEY={ANTHROPIC}", ANTHROPIC, "anthropic-key"),
    ("key sk-proj-abcdEFGH1234ijklMNOP5678 here", "sk-proj-abcdEFGH1234ijklMNOP5678", "openai-key"),
    ("id AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "aws-access-key"),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws-secret-key",
    ),
    (
        "push with ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "github-token",
    ),
    (
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
        "github-token",
    ),
    ("slack xoxb-1234567890-abcdefghij", "xoxb-1234567890-abcdefghij", "slack-token"),
    (
        "maps AIzaSyA1234567890abcdefghijklmnopqrstuv",
        "AIzaSyA1234567890abcdefghijklmnopqrstuv",
        "google-api-key",
    ),
    (f"cookie {JWT}", JWT, "jwt"),
    (f"key file:\n{PEM}\n", "MIIEowIBAAKCAQEA7", "private-key"),
    ("Authorization: Bearer abc.def-ghi_12345678", "abc.def-ghi_12345678", "bearer-token"),
    ("git clone https://bob:s3cretpw@github.com/x/y.git", "s3cretpw", "url-password"),
    ("DB_PASSWORD=pg-s3cret-99 make", "pg-s3cret-99", "secret-assignment"),
    ('{"password": "p@ss w0rd", "user": "bob"}', "p@ss w0rd", "secret-assignment"),
    ("client_secret: abcDEF123456", "abcDEF123456", "secret-assignment"),
    ("my password is hunter2-Secret! thanks", "hunter2-Secret!", "password"),
    (
        "blob Zx9Qw2Lm7Rt5Yp3Kd8Hs1Vb6Nc4Gf0Ja end",
        "Zx9Qw2Lm7Rt5Yp3Kd8Hs1Vb6Nc4Gf0Ja",
        "high-entropy",
    ),
]


@pytest.mark.parametrize(("text", "secret", "kind"), CASES, ids=[c[2] for c in CASES])
def test_each_kind_of_secret_is_replaced_by_a_marker_naming_it(text, secret, kind):
    redacted, counts = redact(text)
    assert secret not in redacted
    assert f"[REDACTED:{kind}]" in redacted
    assert counts[kind] == 1 and sum(counts.values()) == 1, counts


def test_the_name_of_a_secret_stays_so_the_reader_knows_what_was_there():
    redacted, _ = redact("export DB_PASSWORD=pg-s3cret-99 && curl https://bob:pw123456@h/x")
    assert redacted == (
        "export DB_PASSWORD=[REDACTED:secret-assignment] && "
        "curl https://bob:[REDACTED:url-password]@h/x"
    )


def test_a_value_skillopt_knows_is_secret_is_redacted_whatever_its_shape(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "plain words here")
    redacted, counts = redact("the value was plain words here, see")
    assert redacted == "the value was [REDACTED:known-secret], see"
    assert counts == {"known-secret": 1}


ORDINARY = [
    "def read(path: str, token: str, key=lambda x: x): return settings.api_key",
    "for key, value in items.items(): api_key = os.environ['X']; password = get_password()",
    "token = next(tokens)\nauth: true\nrubric_draft: true\ninput_tokens: 21600",
    "Use `KEY=value` pairs; set API_KEY=${API_KEY} or $TOKEN in .env",
    "/usr/lib/python3.11/site-packages/skillopt/harvest/candidates.py",
    "src/components/UserProfileSettings/index.tsx and tests/harvest/test_redact.py::test_x",
    "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 of session 73dd7061-a351-440f-a5a5-e1804ce4c64f",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "The ThisIsAVeryLongClassNameForTesting2 class and HTTPServerRequestHandlerFactory2024",
    "Summarise the monkey keyboard report; the key point is the password policy.",
    "Authorization: Bearer",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_code_paths_and_digests_are_left_alone(text):
    assert redact(text) == (text, {})


def test_high_entropy_is_about_randomness_not_length():
    assert entropy("aaaa") == 0.0 and entropy("abcd") == 2.0
    assert high_entropy("Zx9Qw2Lm7Rt5Yp3Kd8Hs1Vb6Nc4Gf0Ja")
    assert not high_entropy("a" * 40)
    assert not high_entropy("get_user_profile_settings_for_the_account")
    assert not high_entropy("0123456789abcdef0123456789abcdef")  # hex: a digest
