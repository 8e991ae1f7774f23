#include <gtest/gtest.h>
int Add(int a, int b) { return a + b; }
TEST(RangesTest, Adds) { EXPECT_EQ(Add(2, 2), 4); }
TEST(RangesTest, Broken) { EXPECT_EQ(Add(2, 2), 5); }
TEST(RangesTest, Later) { GTEST_SKIP() << "not now"; }
TEST(RangesTest, DISABLED_Off) { }
TEST(JoinTest, EmptyRange) { EXPECT_TRUE(true); }
class Param : public ::testing::TestWithParam<int> {};
TEST_P(Param, IsEven) { EXPECT_EQ(GetParam() % 2, 0); }
INSTANTIATE_TEST_SUITE_P(Nums, Param, ::testing::Values(2, 3));
