import pytest


@pytest.mark.parametrize("x", ["a b", "é", "x[1]", "a - b", "tab\there", 3])
def test_param(x):
    assert x != 3


# A skip from setup: pytest evaluates the mark while setting the test up (its report log
# says `when: setup, outcome: skipped`), as it would a `pytest.skip` in a fixture.
@pytest.mark.skip(reason="not now")
def test_skip():
    pass


def test_skip_inside():
    pytest.skip("decided at run time")


@pytest.mark.xfail(reason="known bug")
def test_xfail():
    assert 0


@pytest.mark.xfail(reason="should fail but passes")
def test_xpass():
    pass


@pytest.mark.xfail(strict=True, reason="strict")
def test_xpass_strict():
    pass


@pytest.fixture
def boom():
    raise RuntimeError("fixture boom")


def test_error_in_setup(boom):
    pass


@pytest.fixture
def bad_teardown():
    yield
    raise RuntimeError("teardown boom")


def test_error_in_teardown(bad_teardown):
    pass


def test_café_ünïcode():
    print("output with PASSED in it")


def test_fails():
    assert 1 == 2, "numbers differ"


class TestGroup:
    def test_method(self):
        assert True

    @pytest.mark.parametrize("n", [1, 2])
    def test_method_param(self, n):
        assert n == 1


@pytest.mark.parametrize("a,b", [(1, 2), (3, 4)], ids=["first case", "second [nested] case"])
def test_ids(a, b):
    assert a < b
