"""Run with `pytest -v -s -rA`: output comes between a test's id and its status."""
import pytest


def test_prints_then_passes():
    print("output of a passing test")


def test_prints_then_skips():
    print("hello from the test")
    pytest.skip("decided late")


def test_prints_then_fails():
    print("about to fail")
    assert 1 == 2


@pytest.fixture
def noisy_skip():
    print("fixture output")
    pytest.skip("skip in fixture")


def test_skipped_by_a_noisy_fixture(noisy_skip):
    pass


def test_no_newline_then_skips():
    # The status lands on the output's line: only the -rA summary's `file:line` tells.
    print("partial", end="")
    pytest.skip("glued to the output")


@pytest.mark.xfail(reason="known")
def test_prints_then_xfails():
    print("xfail output")
    assert 0


@pytest.mark.skip(reason="marked")
def test_marked():
    pass


def test_quiet():
    pass
