import unittest


class TestSetUpFails(unittest.TestCase):
    """An error in setUp: the test body never runs."""

    def setUp(self):
        raise RuntimeError("setUp boom")

    def test_never_runs(self):
        pass


class TestTearDownFails(unittest.TestCase):
    """The body passes, tearDown raises: unittest reports an ERROR for the test."""

    def tearDown(self):
        raise RuntimeError("tearDown boom")

    def test_body_passes(self):
        self.assertTrue(True)


class TestSkipInSetUp(unittest.TestCase):
    def setUp(self):
        self.skipTest("skipped in setUp")

    def test_skipped_by_setup(self):
        pass

