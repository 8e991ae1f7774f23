# Same file and test names as tests/test_demo.py, in another directory.
def test_fails():
    pass


def test_only_here():
    pass
