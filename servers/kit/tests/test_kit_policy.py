"""gaia_kit.execution.policy: shell words parsed in one linear pass, a length limit before any parse."""

import shlex
from collections.abc import Iterator

import pytest
from gaia_kit.core.settings import forget_settings, settings
from gaia_kit.execution.policy import PolicySettings, check_command, shell_tokens


@pytest.fixture
def policy_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in ("POLICY", "DENY", "ALLOW", "MAX_COMMAND_BYTES"):
        monkeypatch.delenv(f"GAIA_TERMINAL_{name}", raising=False)
    forget_settings()
    yield monkeypatch
    forget_settings()


def _shlex_words(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "a'b c'd",
        'a"b\\"c"d "x\\ny"',
        "a\\ b\\;c",
        "echo 'a;b' ; rm -rf /",
        "x=1 y=2 env ls && cat f || true | wc -l &",
        'echo "it\'s" \'say "hi"\' a#b #c ~/x ./y*?',
        "echo $(sudo ls) `id` a();b",
        "printf '%s\\t' \"\" '' x\ty\rz",
    ],
)
def test_words_match_posix_shell_quoting(command: str):
    assert [token.text for token in shell_tokens(command)] == _shlex_words(command)


def test_unclosed_quotes_are_refused_with_the_reason(policy_env):
    for command in ("echo 'abc", 'echo "abc', 'echo "a\\"', "echo abc\\"):
        verdict = check_command(command)
        assert not verdict.allowed and "does not parse as shell words" in verdict.reason


@pytest.mark.parametrize(
    "command",
    ["ls\nsudo id", "ls;sudo id", "true&&FOO=1 env nice sudo id", "(sudo id)", "echo ok |& sudo id"],
)
def test_every_simple_command_is_checked(policy_env, command: str):
    verdict = check_command(command)
    assert not verdict.allowed and verdict.reason.startswith("rule deny:sudo")


def test_quoted_separators_are_arguments(policy_env):
    assert check_command("echo ';' sudo '&&' 'sudo'").allowed


def test_a_command_over_the_length_limit_is_refused_before_parsing(policy_env):
    limit = settings(PolicySettings).max_command_bytes
    assert limit == 65_536
    assert check_command("echo " + "a" * (limit - 5)).allowed
    verdict = check_command("echo " + "a" * 1_000_000)
    assert not verdict.allowed
    assert verdict.reason.startswith("rule length: the command is 1000005 bytes, over the limit of 65536")
    assert "GAIA_TERMINAL_MAX_COMMAND_BYTES" in verdict.reason


def test_the_length_limit_counts_utf8_bytes_and_is_a_setting(policy_env):
    policy_env.setenv("GAIA_TERMINAL_MAX_COMMAND_BYTES", "20")
    forget_settings()
    assert check_command("echo ééééééé").allowed  # 19 bytes
    assert not check_command("echo éééééééé").allowed  # 21 bytes


def test_worst_shapes_at_the_largest_limit_get_the_right_verdict(policy_env):
    policy_env.setenv("GAIA_TERMINAL_MAX_COMMAND_BYTES", "131071")
    forget_settings()
    size = 131_000
    assert check_command("echo " + "a" * size).allowed
    assert check_command("echo '" + "a;" * (size // 2) + "'").allowed
    assert check_command("A=1 " * (size // 4) + "ls").allowed
    assert check_command("ls;" * (size // 3)).allowed
    assert not check_command("|" * size + "sudo id").allowed
    assert not check_command("echo '" + "a" * size).allowed
