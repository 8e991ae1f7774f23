#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <string>
TEST_CASE("udt conversions") {
    int x = 1;
    SUBCASE("to json") { CHECK(x == 1); CHECK(x + 1 == 2); }
    SUBCASE("from json") {
        CHECK(x == 2);
        SUBCASE("nested & deep") { CHECK(x == 1); }
    }
}
TEST_CASE("no subcases") { CHECK(1 == 2); }
TEST_CASE("all good <here>") { SUBCASE("only") { CHECK(true); } }
TEST_CASE("skipped one" * doctest::skip()) { SUBCASE("never") { CHECK(false); } }
